use weida::{Runtime, RuntimeConfig};

#[tokio::main]
async fn main() -> weida::Result<()> {
    let address = std::env::args().nth(1).expect("usage: echo_client ADDRESS");
    let rt = Runtime::new(RuntimeConfig::default())?;
    let req = rt.requester();
    req.connect(&address).await?; // only the key the address pins may answer
    match req.request("hello").await {
        Ok(reply) => println!("{}", String::from_utf8_lossy(&reply)),
        Err(e) if !e.is_definite_failure() => println!("no reply: do not blindly retry"),
        Err(e) => return Err(e),
    }
    rt.close().await;
    Ok(())
}
