use weida::{Runtime, RuntimeConfig};

#[tokio::main]
async fn main() -> weida::Result<()> {
    let exchange = Runtime::new(RuntimeConfig::default())?;
    let listener = exchange.bind("weida://127.0.0.1:0").await?;
    let prices = listener.publisher("/prices")?;

    let desk = Runtime::new(RuntimeConfig::default())?;
    let eur = desk.subscriber();
    eur.connect(&prices.address().to_string()).await?; // pins the exchange's key
    eur.subscribe("prices.*.eur").await?; // installed at the publisher when this returns

    // publish never waits: a subscriber with no room loses its copy, counted by cause.
    prices.publish("prices.btc.usd", "45000")?; // no filter takes it: 0 copies
    let copies = prices.publish("prices.btc.eur", "42000")?;
    let msg = eur.recv().await?;
    println!("{copies} copy: {}", String::from_utf8_lossy(&msg.body));
    desk.close().await;
    exchange.close().await;
    Ok(())
}
