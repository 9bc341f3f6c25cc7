//! What the unit tests share: endpoints connected in process, on the I/O runtime.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::io::io;

/// A pusher connected to a puller in process, with the runtimes and listener they need.
pub(crate) struct Pair {
    pub(crate) _runtimes: (weida::Runtime, weida::Runtime, weida::Listener),
    pub(crate) pusher: weida::Pusher,
    pub(crate) puller: weida::Puller,
}

/// A [`Pair`] on a name no other test uses.
pub(crate) fn pair() -> Pair {
    static N: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "weida+inproc://ffi-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    io().block_on(async move {
        let server = weida::Runtime::new(Default::default()).unwrap();
        let listener = server.bind(&name).await.unwrap();
        let puller = listener.puller("/jobs").unwrap();
        let client = weida::Runtime::new(Default::default()).unwrap();
        let pusher = client.pusher();
        pusher.connect(&puller.address().to_string()).await.unwrap();
        Pair {
            _runtimes: (server, client, listener),
            pusher,
            puller,
        }
    })
}
