//! The Req/Rep and Push/Pull half of the demo, in one Rust process (`./dev demo` runs the
//! polyglot one, demo/run.py): services on loopback with ephemeral, pinned identities and no
//! server to install. A price service answers requests, a worker pool pulls jobs, and a client
//! drives both; every side prints what it sees, and the run ends by itself with a summary (exit
//! code 1 if any side missed something). `cargo run -p weida --example demo`.

use std::time::Duration;

use weida::{Metadata, Runtime, RuntimeConfig};

#[tokio::main(flavor = "current_thread")]
async fn main() -> weida::Result<()> {
    let services = Runtime::new(RuntimeConfig::default())?;
    let listener = services.bind("weida://127.0.0.1:0").await?;
    let prices = listener.replier("/prices")?;
    let jobs = listener.puller("/jobs")?;
    println!(
        "services  bound {} as {}",
        listener.address(),
        services.fingerprint()
    );

    let price_addr = prices.address().to_string();
    let job_addr = jobs.address().to_string();
    let answering = tokio::spawn(async move {
        let mut answered = 0;
        while let Ok(mut ex) = prices.accept().await {
            let item = ex.take_body().await?;
            let peer = ex
                .meta()
                .peer
                .clone()
                .map(|p| p.to_string())
                .unwrap_or_default();
            let price = 10 * item.len();
            println!(
                "prices    {:>8} asked by {}…  -> {price}",
                String::from_utf8_lossy(&item),
                &peer[..19]
            );
            ex.reply(price.to_string()).await?;
            answered += 1;
            if answered == 3 {
                break;
            }
        }
        Ok::<_, weida::Error>(answered)
    });
    let working = tokio::spawn(async move {
        let mut done = Vec::new();
        while done.len() < 5 {
            let m = jobs.recv().await?;
            let id = m
                .meta
                .metadata
                .get("job")
                .map(|v| String::from_utf8_lossy(v).into_owned());
            println!(
                "worker    job {} ({} bytes)",
                id.as_deref().unwrap_or("?"),
                m.body.len()
            );
            done.push(id.unwrap_or_default());
        }
        Ok::<_, weida::Error>(done)
    });

    // The client pins the services' key through the address it was given.
    let client = Runtime::new(RuntimeConfig::default())?;
    let requester = client.requester();
    requester.connect(&price_addr).await?;
    let pusher = client.pusher();
    pusher.connect(&job_addr).await?;
    let mut quoted = 0;
    for item in ["apple", "pear", "fig"] {
        let price = requester.request(item).await?;
        println!("client    {item} costs {}", String::from_utf8_lossy(&price));
        quoted += 1;
    }
    for n in 0..5 {
        pusher
            .send_with(
                Metadata::new().with("job", n.to_string()),
                vec![b'x'; 1024 * (n + 1)],
            )
            .await?;
    }
    let drained = client.drain(Duration::from_secs(5)).await;
    let answered = answering.await.expect("the price service ran")?;
    let done = working.await.expect("the workers ran")?;
    println!(
        "summary   {quoted} quotes, {answered} answered; {} jobs done; drain delivered {} with {} outstanding",
        done.len(),
        drained.delivered,
        drained.outstanding
    );
    if quoted != 3 || answered != 3 || done.len() != 5 || drained.outstanding != 0 {
        eprintln!("demo: a side did not see what it should");
        std::process::exit(1);
    }
    Ok(())
}
