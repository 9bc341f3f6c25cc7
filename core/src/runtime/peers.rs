//! The peers of a dialling endpoint: one slot per address it connected, each live with a link
//! or down while its redial task works (runtime/redial.rs), picked round-robin per message.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::events::EventSender;
use crate::address::Address;
use crate::connection::link::{LaneCache, Link};
use crate::error::{Error, LossCause, Result};

/// The slots of a dialling endpoint, picked round-robin per message.
#[derive(Default)]
pub(crate) struct PeerSet {
    links: Mutex<Links>,
    /// Wakes a pick that waits for a live link: a slot went live, was given up or removed.
    changed: Notify,
    /// The endpoint's [`crate::PeerEvent`]s.
    pub(crate) events: EventSender,
}

/// The slots and whose turn is next: one lock for both, so a pick is one lock and no other
/// atomic operation.
#[derive(Default)]
struct Links {
    all: Vec<Entry>,
    next: usize,
}

struct Entry {
    /// The address as the application connected it (what `disconnect` names).
    address: Address,
    /// The slot's current link: live, or the lost one until a redial replaces it.
    link: Arc<Link>,
    /// This endpoint's handle to the link's lane ([`Link::lane_try_send`]).
    lane: LaneCache,
    /// The slot's task, which watches its connection and redials it.
    redial: Option<AbortHandle>,
    /// The task may still bring the slot back (false once given up, and under
    /// `ReconnectPolicy::never()`): a pick waits for it.
    hopeful: bool,
}

/// What a pick found when no link is live.
enum Down {
    /// No slot at all: the endpoint never connected (or disconnected everything).
    Empty,
    /// Every slot is down and some redial may bring one back: the last loss.
    Redialling(LossCause),
    /// Every slot is down and given up: the last loss.
    Lost(LossCause),
}

impl PeerSet {
    pub(crate) fn add(&self, address: Address, link: Arc<Link>, redial: Option<AbortHandle>) {
        let l = &mut self.links.lock().unwrap().all;
        if let Some(i) = l.iter().position(|e| e.address == address) {
            if let Some(t) = l.swap_remove(i).redial {
                t.abort();
            }
        }
        l.push(Entry {
            address,
            link,
            lane: None,
            hopeful: redial.is_some(),
            redial,
        });
        self.changed.notify_waiters();
    }

    /// `task` watches the slot of `address` from now on, and redials it if `hopeful`.
    pub(crate) fn redialled_by(&self, address: &Address, task: AbortHandle, hopeful: bool) {
        let mut guard = self.links.lock().unwrap();
        match guard.all.iter_mut().find(|e| &e.address == address) {
            Some(e) => {
                e.redial = Some(task);
                e.hopeful = hopeful;
            }
            None => task.abort(),
        }
    }

    /// A redial brought `address` back on `link`; false if the slot is gone (disconnected).
    pub(crate) fn replace(&self, address: &Address, link: Arc<Link>) -> bool {
        let mut guard = self.links.lock().unwrap();
        let Some(e) = guard.all.iter_mut().find(|e| &e.address == address) else {
            return false;
        };
        e.link = link;
        e.lane = None;
        drop(guard);
        self.changed.notify_waiters();
        true
    }

    /// The redial of `address` gave up: its slot stays, down, and a pick no longer waits for it.
    pub(crate) fn gave_up(&self, address: &Address) {
        let mut guard = self.links.lock().unwrap();
        if let Some(e) = guard.all.iter_mut().find(|e| &e.address == address) {
            e.hopeful = false;
        }
        drop(guard);
        self.changed.notify_waiters();
    }

    /// Removes the slot of `address` and stops its redial: its current link.
    pub(crate) fn remove(&self, address: &Address) -> Option<Arc<Link>> {
        let l = &mut self.links.lock().unwrap().all;
        let i = l.iter().position(|e| &e.address == address)?;
        let e = l.swap_remove(i);
        if let Some(t) = e.redial {
            t.abort();
        }
        self.changed.notify_waiters();
        Some(e.link)
    }

    /// Removes every slot and stops every redial (the endpoint is dropped).
    pub(crate) fn take_all(&self) -> Vec<Arc<Link>> {
        let all = std::mem::take(&mut self.links.lock().unwrap().all);
        self.changed.notify_waiters();
        all.into_iter()
            .map(|e| {
                if let Some(t) = e.redial {
                    t.abort();
                }
                e.link
            })
            .collect()
    }

    /// Live slots.
    pub(crate) fn live(&self) -> usize {
        self.links
            .lock()
            .unwrap()
            .all
            .iter()
            .filter(|e| e.link.loss().is_none())
            .count()
    }

    /// Offers the next live link, with this set's handle to its lane, round-robin, to `f`;
    /// the turn passes on only if `f` took it (returned Some), so a caller that then falls
    /// back to [`PeerSet::pick`] picks the same link. `Ok(None)` also when every slot is down
    /// and some is being redialled (`pick` waits for it); errors as `pick` does otherwise.
    pub(crate) fn try_pick<R>(
        &self,
        f: impl FnOnce(&Arc<Link>, &mut LaneCache) -> Option<R>,
    ) -> Result<Option<R>> {
        let mut guard = self.links.lock().unwrap();
        let Links { all: l, next } = &mut *guard;
        if l.is_empty() {
            return Err(Error::NotConnected);
        }
        let start = *next;
        let mut last = None;
        let mut redialling = false;
        let n = l.len();
        for i in 0..n {
            let e = &mut l[(start + i) % n];
            match e.link.ended() {
                None => {
                    let r = f(&e.link, &mut e.lane);
                    if r.is_some() {
                        *next = start.wrapping_add(i + 1);
                    }
                    return Ok(r);
                }
                Some(c) => {
                    redialling |= e.hopeful;
                    last = Some(c);
                }
            }
        }
        match redialling {
            true => Ok(None),
            false => Err(Error::ConnectionLost(last.unwrap_or(LossCause::PeerClosed))),
        }
    }

    /// The next live link, round-robin, or what there is instead.
    fn pick_now(&self) -> std::result::Result<Arc<Link>, Down> {
        let mut guard = self.links.lock().unwrap();
        let Links { all: l, next } = &mut *guard;
        if l.is_empty() {
            return Err(Down::Empty);
        }
        let start = *next;
        *next = start.wrapping_add(1);
        let mut last = None;
        let mut redialling = false;
        for i in 0..l.len() {
            let e = &l[(start + i) % l.len()];
            match e.link.loss() {
                None => return Ok(e.link.clone()),
                Some(c) => {
                    redialling |= e.hopeful;
                    last = Some(c);
                }
            }
        }
        let last = last.unwrap_or(LossCause::PeerClosed);
        Err(match redialling {
            true => Down::Redialling(last),
            false => Down::Lost(last),
        })
    }

    /// The next live link, round-robin. When every slot is down and some is being redialled,
    /// waits for one to come back, at most `within` (then `Timeout`). `NotConnected` when the
    /// endpoint has no slot; the last loss when every slot is down and given up. Cancel-safe.
    pub(crate) async fn pick(&self, within: Option<Duration>) -> Result<Arc<Link>> {
        let deadline = within.map(|d| tokio::time::Instant::now() + d);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let last = match self.pick_now() {
                Ok(link) => return Ok(link),
                Err(Down::Empty) => return Err(Error::NotConnected),
                Err(Down::Lost(c)) => return Err(Error::ConnectionLost(c)),
                Err(Down::Redialling(c)) => c,
            };
            match deadline {
                Some(at) => {
                    if tokio::time::timeout_at(at, changed).await.is_err() {
                        return Err(Error::Timeout {
                            last_loss: Some(last),
                        });
                    }
                }
                None => changed.await,
            }
        }
    }
}
