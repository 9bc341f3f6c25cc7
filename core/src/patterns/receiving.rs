//! What the two receiving endpoints share, as one trait: code written once for a [`Puller`]
//! and a [`Subscriber`] (the bindings' receive projections are) takes `R: Receiving`.

use std::future::Future;

use super::{BoundSubscriber, Bus, DialingPuller, Pair, Puller, Subscriber};
use crate::connection::handles::Message;
use crate::error::Result;

/// Whole messages from a [`Puller`] or a [`Subscriber`], and a hand-back for one whose
/// receive was abandoned as it arrived. Each method is the endpoint's own of the same name.
///
/// ```
/// use weida::{Message, Receiving, Result};
/// async fn drain<R: Receiving>(r: &R) -> Result<Vec<Message>> {
///     let mut out = r.recv_many(64).await?;
///     while let Some(m) = r.try_recv() {
///         out.push(m?);
///     }
///     Ok(out)
/// }
/// ```
pub trait Receiving: Send + Sync + 'static {
    /// The next whole message. Cancel-safe, for both endpoints.
    fn recv(&self) -> impl Future<Output = Result<Message>> + Send;
    /// Up to `max` messages: waits for the first, then takes what is whole without waiting
    /// again. Cancel-safe, for both endpoints.
    fn recv_many(&self, max: usize) -> impl Future<Output = Result<Vec<Message>>> + Send;
    /// A message, or the error `recv` would return, if one is there without waiting.
    fn try_recv(&self) -> Option<Result<Message>>;
    /// Puts a received message back in front of the queue.
    fn give_back(&self, m: Message);
}

/// Each endpoint's inherent methods, which take precedence over the trait's in the bodies.
macro_rules! receiving {
    ($($endpoint:ident),*) => {$(
        impl Receiving for $endpoint {
            fn recv(&self) -> impl Future<Output = Result<Message>> + Send {
                $endpoint::recv(self)
            }
            fn recv_many(&self, max: usize) -> impl Future<Output = Result<Vec<Message>>> + Send {
                $endpoint::recv_many(self, max)
            }
            fn try_recv(&self) -> Option<Result<Message>> {
                $endpoint::try_recv(self)
            }
            fn give_back(&self, m: Message) {
                $endpoint::give_back(self, m)
            }
        }
    )*};
}

receiving!(
    Puller,
    Subscriber,
    Bus,
    BoundSubscriber,
    Pair,
    DialingPuller
);
