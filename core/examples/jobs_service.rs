use std::time::Duration;

use weida::service::{Outcome, Service};
use weida::{Runtime, RuntimeConfig};

// A job queue served by a handler: a back-off for what can wait, a dead letter at the limit.
// Prints `READY <address>` (push jobs there) and serves until Ctrl-C, then lets the handlers in
// flight finish and prints the stop report.
#[tokio::main]
async fn main() -> weida::Result<()> {
    let rt = Runtime::new(RuntimeConfig::default())?;
    let listener = rt.bind("weida://127.0.0.1:0").await?;
    let dead = listener.puller("/dead")?; // where a job goes after its fifth attempt
    let jobs = Service::new(&rt)
        .queue(&listener, "/jobs")?
        .concurrency(4)
        .max_attempts(5)
        .dead_letter(&dead.address().to_string())
        .start()
        .await?;
    tokio::spawn(async move {
        while let Ok(m) = dead.recv().await {
            let attempt = m.meta.metadata.get("weida-attempt").cloned();
            let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
            let attempt = text(&attempt.unwrap_or_default());
            println!("dead {} after {attempt}", text(&m.body));
        }
    });
    println!(
        "READY {}",
        jobs.address().expect("a queue has its own address")
    );
    let served = jobs.run(|m, attempt| async move {
        match &m.body[..] {
            b"poison" => Err("cannot parse it"), // a failure: logged, then a retry
            b"flaky" if attempt < 3 => Ok(Outcome::RetryAfter(Duration::from_millis(50) * attempt)),
            body => {
                println!("done {} attempt {attempt}", String::from_utf8_lossy(body));
                Ok(Outcome::Done)
            }
        }
    });
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
        jobs.stop(Duration::from_secs(10)).await
    };
    let (served, stopped) = tokio::join!(served, stop);
    served?;
    println!("stopped {stopped:?}");
    Ok(())
}
