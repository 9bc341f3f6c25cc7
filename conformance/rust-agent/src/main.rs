//! The Rust agent of the conformance suite: reads one JSON request per line on stdin, carries
//! it out with weida's public API, and writes one JSON response per line on stdout, with events
//! for background work in between. The protocol is conformance/README.md; requests run
//! concurrently, so a request awaiting a reply does not block the next line.

mod body;
mod endpoints;
mod ops;
mod protocol;

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use protocol::Out;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(mut line) = rx.recv().await {
            line.push('\n');
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                return;
            }
        }
    });
    let agent = Arc::new(ops::Agent::new(Out(tx.clone())));
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let out = Out(tx.clone());
        let request: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                out.line(json!({"id": null, "ok": false,
                    "error": {"code": "AGENT_BAD_REQUEST", "message": format!("not JSON: {e}")}}));
                continue;
            }
        };
        let agent = agent.clone();
        tokio::spawn(async move {
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            let op = request.get("op").and_then(Value::as_str).unwrap_or("");
            let args = request.get("args").cloned().unwrap_or_else(|| json!({}));
            let response = match agent.run(op, &args).await {
                Ok(result) => json!({"id": id, "ok": true, "result": result}),
                Err(f) => json!({"id": id, "ok": false, "error": f.to_json()}),
            };
            out.line(response);
        });
    }
    // Standard input closed: the runner is done with this agent.
    agent.shutdown_all();
    // Let the writer flush what is queued; background tasks keep senders, so it never ends.
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
    drop(writer);
    std::process::exit(0);
}
