//! An endpoint's queue: what dispatch hands a bound endpoint (streams, and whole messages from
//! lanes), bounded by `Limits::endpoint_queue`. The interface of a bounded channel (senders,
//! weak senders, one receiver; closed once every sender is gone and it is empty), built as a
//! locked deque: a push or a pop takes one lock, and a side is woken only when the other may be
//! waiting (a push into an empty queue, a pop that drains a full one to half), where a channel
//! pays a semaphore and a waker per item on both sides (profiled on the lane path: ~15 % of a
//! small message's cost).
//!
//! Senders waiting for room are woken at half, not at the first free slot: a receiver slower
//! than its sender (a binding's JS thread behind a lane) would otherwise wake the sender's
//! thread once per item, one cross-thread wakeup per message (profiled in the Node binding:
//! ~10 % of its receive thread), where at half it is one per `cap / 2` items.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;

/// The queue itself: what its senders and its receiver share.
struct Queue<T> {
    items: Mutex<VecDeque<T>>,
    cap: usize,
    /// Live senders: 0 means closed for the receiver once the queue is empty.
    senders: AtomicUsize,
    receiver_gone: AtomicBool,
    /// Wakes the receiver: an item went into an empty queue, or the last sender left.
    readable: Notify,
    /// Wakes senders waiting for room (all of them: they race for it) once the queue drains to
    /// `low`, or the receiver left.
    room: Notify,
    /// The length at which waiting senders are woken: `cap / 2`.
    low: usize,
}

/// A queue of at most `cap` items (at least 1).
pub(crate) fn channel<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    let cap = cap.max(1);
    let shared = Arc::new(Queue {
        items: Mutex::new(VecDeque::new()),
        cap,
        low: cap / 2,
        senders: AtomicUsize::new(1),
        receiver_gone: AtomicBool::new(false),
        readable: Notify::new(),
        room: Notify::new(),
    });
    (
        Sender {
            shared: shared.clone(),
        },
        Receiver { shared },
    )
}

pub(crate) struct Sender<T> {
    shared: Arc<Queue<T>>,
}

/// A sender that does not keep the queue open.
pub(crate) struct WeakSender<T> {
    shared: Weak<Queue<T>>,
}

pub(crate) struct Receiver<T> {
    shared: Arc<Queue<T>>,
}

/// Why `try_send` queued nothing: the item comes back.
pub(crate) enum TrySendError<T> {
    Full(T),
    Closed(T),
}

impl<T> Sender<T> {
    /// Queues `item` if there is room now.
    pub(crate) fn try_send(&self, item: T) -> Result<(), TrySendError<T>> {
        let s = &*self.shared;
        let mut items = s.items.lock().unwrap();
        // Under the lock: the receiver sets it under the lock as it empties the queue, so
        // nothing is queued after that.
        if s.receiver_gone.load(Ordering::Acquire) {
            return Err(TrySendError::Closed(item));
        }
        if items.len() >= s.cap {
            return Err(TrySendError::Full(item));
        }
        items.push_back(item);
        let first = items.len() == 1;
        drop(items);
        if first {
            s.readable.notify_one();
        }
        Ok(())
    }

    /// Queues items from the front of `items`, in order, while there is room: one lock for
    /// many. What did not fit stays in `items`. `Err(())` when the receiver is gone (nothing
    /// was queued).
    pub(crate) fn try_send_many(&self, items: &mut VecDeque<T>) -> Result<(), ()> {
        let s = &*self.shared;
        let mut queued = s.items.lock().unwrap();
        if s.receiver_gone.load(Ordering::Acquire) {
            return Err(());
        }
        let was_empty = queued.is_empty();
        let n = items.len().min(s.cap.saturating_sub(queued.len()));
        queued.extend(items.drain(..n));
        drop(queued);
        if was_empty && n > 0 {
            s.readable.notify_one();
        }
        Ok(())
    }

    /// Queues every item of `items`, in order, waiting for room as often as it must (each
    /// wait ends at `cap / 2`, so a batch goes in a few locks, not one per item). `Err(())`
    /// when the receiver is gone; what was not queued is still in `items`. Cancel-safe in the
    /// same way: what is queued is queued, the rest stays in `items`.
    pub(crate) async fn send_many(&self, items: &mut VecDeque<T>) -> Result<(), ()> {
        loop {
            let room = self.shared.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            self.try_send_many(items)?;
            if items.is_empty() {
                return Ok(());
            }
            room.await;
        }
    }

    /// Queues `item`, waiting for room; gives it back if the receiver is gone. Cancel-safe: a
    /// cancelled send queued nothing (the item is dropped with the future).
    pub(crate) async fn send(&self, mut item: T) -> Result<(), T> {
        loop {
            let room = self.shared.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.try_send(item) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Closed(i)) => return Err(i),
                Err(TrySendError::Full(i)) => item = i,
            }
            room.await;
        }
    }

    /// The receiver is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.receiver_gone.load(Ordering::Acquire)
    }

    pub(crate) fn downgrade(&self) -> WeakSender<T> {
        WeakSender {
            shared: Arc::downgrade(&self.shared),
        }
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::Relaxed);
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.readable.notify_one();
        }
    }
}

impl<T> WeakSender<T> {
    /// A sender, unless every sender is gone (the queue is closed for good).
    pub(crate) fn upgrade(&self) -> Option<Sender<T>> {
        let shared = self.shared.upgrade()?;
        let mut n = shared.senders.load(Ordering::Relaxed);
        loop {
            if n == 0 {
                return None;
            }
            match shared.senders.compare_exchange_weak(
                n,
                n + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(Sender { shared }),
                Err(now) => n = now,
            }
        }
    }
}

/// Why `try_recv` returned nothing.
pub(crate) enum TryRecvError {
    Empty,
    /// Every sender is gone and the queue is empty.
    Disconnected,
}

impl<T> Receiver<T> {
    pub(crate) fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.shared.pop(|_| true)
    }

    /// The next item; None once every sender is gone and the queue is empty. Cancel-safe.
    pub(crate) async fn recv(&mut self) -> Option<T> {
        let s = &*self.shared;
        loop {
            let readable = s.readable.notified();
            tokio::pin!(readable);
            readable.as_mut().enable();
            match s.pop(|_| true) {
                Ok(item) => return Some(item),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => readable.await,
            }
        }
    }
}

/// Takes items beside the [`Receiver`], through a shared reference: for a receive that finds
/// an item ready without the lock its owner keeps the receiver under. It does not keep the
/// queue open for senders; the receiver does.
pub(crate) struct Taker<T> {
    shared: Arc<Queue<T>>,
}

impl<T> Taker<T> {
    /// The first item if `take` accepts it; `Empty` when there is none or it is not accepted
    /// (it stays first).
    pub(crate) fn try_recv_if(&self, take: impl FnOnce(&T) -> bool) -> Result<T, TryRecvError> {
        self.shared.pop(take)
    }

    /// Up to `max` items from the front, under one lock, while `take` accepts them, each
    /// handed to `put`; how many. Stops at the first item `take` refuses (it stays first).
    pub(crate) fn recv_while(
        &self,
        max: usize,
        take: impl Fn(&T) -> bool,
        mut put: impl FnMut(T),
    ) -> usize {
        let s = &*self.shared;
        let mut items = s.items.lock().unwrap();
        let before = items.len();
        let mut n = 0;
        while n < max && items.front().is_some_and(&take) {
            put(items.pop_front().expect("a front"));
            n += 1;
        }
        let after = items.len();
        drop(items);
        s.drained(before, after);
        n
    }
}

impl<T> Receiver<T> {
    pub(crate) fn taker(&self) -> Taker<T> {
        Taker {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Queue<T> {
    /// Wakes the senders waiting for room if taking items from the queue (from `before` to
    /// `after` long) crossed `low`. A sender waits only on a full queue, so every drain from
    /// full crosses it; a sender that pushed meanwhile is not waiting.
    fn drained(&self, before: usize, after: usize) {
        if before > self.low && after <= self.low {
            self.room.notify_waiters();
        }
    }

    fn pop(&self, take: impl FnOnce(&T) -> bool) -> Result<T, TryRecvError> {
        let s = self;
        let mut items = s.items.lock().unwrap();
        if items.front().is_some_and(|i| !take(i)) {
            return Err(TryRecvError::Empty);
        }
        match items.pop_front() {
            Some(item) => {
                let after = items.len();
                drop(items);
                s.drained(after + 1, after);
                Ok(item)
            }
            // Read under the lock: a sender queues under it before it can be dropped.
            None if s.senders.load(Ordering::Acquire) == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let s = &*self.shared;
        // What was queued goes now (a stream is refused as its handle drops), not when the
        // last sender does.
        let items = {
            let mut items = s.items.lock().unwrap();
            s.receiver_gone.store(true, Ordering::Release);
            std::mem::take(&mut *items)
        };
        s.room.notify_waiters();
        drop(items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fifo_bounded_and_closed_when_the_senders_are_gone() {
        let (tx, mut rx) = channel::<u32>(2);
        tx.try_send(1).ok().unwrap();
        tx.try_send(2).ok().unwrap();
        assert!(matches!(tx.try_send(3), Err(TrySendError::Full(3))));
        // A waiting send completes once the receiver takes one.
        let tx2 = tx.clone();
        let waiting = tokio::spawn(async move { tx2.send(3).await.is_ok() });
        assert_eq!(rx.recv().await, Some(1));
        assert!(waiting.await.unwrap());
        let weak = tx.downgrade();
        drop(tx);
        // Items queued before the senders left are still received, then the end.
        assert_eq!(rx.recv().await, Some(2));
        assert_eq!(rx.recv().await, Some(3));
        assert_eq!(rx.recv().await, None);
        assert!(matches!(rx.try_recv(), Err(TryRecvError::Disconnected)));
        assert!(weak.upgrade().is_none(), "closed for good");
    }

    #[tokio::test]
    async fn a_waiting_sender_is_woken_when_the_queue_drains_to_half() {
        let (tx, mut rx) = channel::<u32>(4);
        for i in 0..4 {
            tx.try_send(i).ok().unwrap();
        }
        let tx2 = tx.clone();
        let waiting = tokio::spawn(async move { tx2.send(4).await.is_ok() });
        // The current-thread runtime runs the sender to its wait here.
        tokio::task::yield_now().await;
        assert_eq!(rx.try_recv().ok(), Some(0));
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one free slot of four wakes nobody");
        assert_eq!(rx.try_recv().ok(), Some(1));
        assert!(waiting.await.unwrap(), "two of four (half) wake the sender");
        for want in 2..5 {
            assert_eq!(rx.try_recv().ok(), Some(want), "in order");
        }
    }

    #[tokio::test]
    async fn a_weak_sender_does_not_keep_it_open_and_a_gone_receiver_refuses() {
        let (tx, mut rx) = channel::<u32>(4);
        let weak = tx.downgrade();
        let strong = weak.upgrade().expect("a sender lives");
        strong.try_send(7).ok().unwrap();
        drop(strong);
        drop(tx);
        assert_eq!(rx.recv().await, Some(7));
        assert_eq!(rx.recv().await, None);

        let (tx, rx) = channel::<u32>(1);
        tx.try_send(1).ok().unwrap();
        let tx2 = tx.clone();
        let waiting = tokio::spawn(async move { tx2.send(2).await });
        tokio::task::yield_now().await;
        drop(rx);
        assert_eq!(
            waiting.await.unwrap(),
            Err(2),
            "the waiting send gets its item back"
        );
        assert!(tx.is_closed());
        assert!(matches!(tx.try_send(3), Err(TrySendError::Closed(3))));
    }

    #[tokio::test]
    async fn a_batch_goes_in_what_fits_then_waits_for_half_and_keeps_its_order() {
        let (tx, mut rx) = channel::<u32>(4);
        tx.try_send(0).ok().unwrap();
        let mut batch: VecDeque<u32> = (1..=6).collect();
        tx.try_send_many(&mut batch).unwrap();
        assert_eq!(batch, [4, 5, 6], "three fit beside the one queued");
        // A receiver waiting on an empty queue is woken by a batch.
        let (tx2, mut rx2) = channel::<u32>(4);
        let waiting = tokio::spawn(async move { rx2.recv().await });
        tokio::task::yield_now().await;
        tx2.try_send_many(&mut VecDeque::from([9])).unwrap();
        assert_eq!(waiting.await.unwrap(), Some(9));

        let sending = tokio::spawn(async move {
            let r = tx.send_many(&mut batch).await;
            (r, batch)
        });
        let mut got = Vec::new();
        while got.len() < 7 {
            got.push(rx.recv().await.unwrap());
        }
        assert_eq!(got, (0..7).collect::<Vec<_>>(), "in order across the waits");
        let (r, rest) = sending.await.unwrap();
        assert!(r.is_ok() && rest.is_empty());

        // A gone receiver: nothing is queued and the items stay with the caller.
        let (tx, rx) = channel::<u32>(2);
        drop(rx);
        let mut batch = VecDeque::from([1, 2]);
        assert!(tx.try_send_many(&mut batch).is_err());
        assert!(tx.send_many(&mut batch).await.is_err());
        assert_eq!(batch, [1, 2]);
    }

    #[tokio::test]
    async fn a_taker_takes_only_what_it_accepts_and_leaves_the_rest_first() {
        let (tx, rx) = channel::<u32>(4);
        let taker = rx.taker();
        tx.try_send(1).ok().unwrap();
        tx.try_send(2).ok().unwrap();
        assert!(matches!(
            taker.try_recv_if(|v| *v == 2),
            Err(TryRecvError::Empty)
        ));
        assert_eq!(taker.try_recv_if(|v| *v == 1).ok(), Some(1));
        let mut rx = rx;
        assert_eq!(rx.try_recv().ok(), Some(2));
        drop(tx);
        assert!(matches!(
            taker.try_recv_if(|_| true),
            Err(TryRecvError::Disconnected)
        ));
    }

    #[tokio::test]
    async fn a_taker_takes_a_run_under_one_lock_and_wakes_a_sender_at_half() {
        let (tx, rx) = channel::<u32>(4);
        for i in 0..4 {
            tx.try_send(i).ok().unwrap();
        }
        let taker = rx.taker();
        let tx2 = tx.clone();
        let waiting = tokio::spawn(async move { tx2.send(10).await.is_ok() });
        tokio::task::yield_now().await;
        let mut got = Vec::new();
        // Stops at the first item refused, and at `max`.
        assert_eq!(taker.recv_while(8, |v| *v != 2, |v| got.push(v)), 2);
        assert_eq!(got, [0, 1]);
        assert!(
            waiting.await.unwrap(),
            "drained to half: the sender is woken"
        );
        assert_eq!(taker.recv_while(1, |_| true, |v| got.push(v)), 1);
        assert_eq!(taker.recv_while(8, |_| true, |v| got.push(v)), 2);
        assert_eq!(got, [0, 1, 2, 3, 10]);
    }

    #[tokio::test]
    async fn many_senders_one_receiver_lose_nothing() {
        let (tx, mut rx) = channel::<u64>(3);
        let mut tasks = Vec::new();
        for s in 0..4u64 {
            let tx = tx.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..500u64 {
                    tx.send(s * 1000 + i).await.ok().unwrap();
                }
            }));
        }
        drop(tx);
        let mut got = Vec::new();
        while let Some(v) = rx.recv().await {
            got.push(v);
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(got.len(), 2000);
        for s in 0..4u64 {
            let mine: Vec<_> = got.iter().filter(|v| **v / 1000 == s).copied().collect();
            assert_eq!(
                mine,
                (0..500).map(|i| s * 1000 + i).collect::<Vec<_>>(),
                "in order per sender"
            );
        }
    }
}
