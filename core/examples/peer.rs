//! A Rust peer for cross-language tests: binds `ADDRESS` (default `weida://127.0.0.1:0`),
//! serves `/echo` (a replier that answers with the request body and metadata), `/jobs`
//! (a puller that answers each message on stdout as `JOB <len> <hex of first 16 bytes>`) and
//! `/feed` (a publisher: a line `PUB <topic> <text>` on stdin publishes the text and answers
//! `PUBLISHED <copies>`), prints `READY <bound address>` and runs until its standard input
//! closes.
//!
//! `cargo run -p weida --example peer -- [ADDRESS] [--identity DIR]`

use tokio::io::AsyncBufReadExt;
use weida::{Identity, Runtime, RuntimeConfig};

#[tokio::main(flavor = "current_thread")]
async fn main() -> weida::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut address = "weida://127.0.0.1:0".to_string();
    let mut config = RuntimeConfig::default();
    while let Some(a) = args.next() {
        if a == "--identity" {
            let dir = args.next().expect("--identity DIR");
            config.identity = Identity::load_or_create(dir)?;
        } else {
            address = a;
        }
    }
    let rt = Runtime::new(config)?;
    let listener = rt.bind(&address).await?;
    let echo = listener.replier("/echo")?;
    let jobs = listener.puller("/jobs")?;
    let feed = listener.publisher("/feed")?;
    tokio::spawn(async move {
        while let Ok(mut ex) = echo.accept().await {
            let meta = ex.meta().metadata.clone();
            match ex.take_body().await {
                Ok(body) => {
                    let _ = ex.reply_with(meta, body).await;
                }
                Err(e) => eprintln!("echo: {e}"),
            }
        }
    });
    tokio::spawn(async move {
        while let Ok(m) = jobs.recv().await {
            let head: String = m.body.iter().take(16).map(|b| format!("{b:02x}")).collect();
            println!("JOB {} {head}", m.body.len());
        }
    });
    println!("READY {}", listener.address());
    // Run until the parent closes our stdin (no sleep, no signal handling needed).
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some((topic, text)) = line.strip_prefix("PUB ").and_then(|l| l.split_once(' ')) {
            match feed.publish(topic, text.to_string()) {
                Ok(n) => println!("PUBLISHED {n}"),
                Err(e) => println!("PUBLISH FAILED {}", e.code()),
            }
        }
    }
    rt.shutdown();
    Ok(())
}
