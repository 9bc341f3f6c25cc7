use weida::{Identity, Runtime, RuntimeConfig};

#[tokio::main]
async fn main() -> weida::Result<()> {
    let bind = std::env::args().nth(1);
    // The service's key, kept in a directory: made on its first run, loaded on every later one.
    let identity = Identity::load_or_create("echo-identity")?;
    let rt = Runtime::new(RuntimeConfig {
        identity,
        ..RuntimeConfig::default()
    })?;
    let listener = rt
        .bind(bind.as_deref().unwrap_or("weida://127.0.0.1:4433"))
        .await?;
    let echo = listener.replier("/echo")?;
    println!("{}", echo.address()); // weida://sha256:…@127.0.0.1:4433/echo: hand it to clients
    while let Ok(mut exchange) = echo.accept().await {
        let replied = match exchange.take_body().await {
            Ok(body) => exchange.reply(body).await,
            Err(e) => Err(e),
        };
        if let Err(e) = replied {
            println!("request failed: {}", e.code()); // cancelled, connection lost
        }
    }
    Ok(())
}
