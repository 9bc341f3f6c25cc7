//! The peers of a dialling endpoint: the links it sends to, picked round-robin per message.

use std::sync::{Arc, Mutex};

use crate::address::Address;
use crate::connection::link::{LaneCache, Link};
use crate::error::{Error, LossCause, Result};

/// The links a dialling endpoint sends to, picked round-robin per message.
#[derive(Default)]
pub(crate) struct PeerSet {
    links: Mutex<Links>,
}

/// The links and whose turn is next: one lock for both, so a pick is one lock and no other
/// atomic operation.
#[derive(Default)]
struct Links {
    all: Vec<Entry>,
    next: usize,
}

struct Entry {
    address: Address,
    link: Arc<Link>,
    /// This endpoint's handle to the link's lane ([`Link::lane_try_send`]).
    lane: LaneCache,
}

impl PeerSet {
    pub(crate) fn add(&self, address: Address, link: Arc<Link>) {
        let l = &mut self.links.lock().unwrap().all;
        l.retain(|e| e.address != address);
        l.push(Entry {
            address,
            link,
            lane: None,
        });
    }

    pub(crate) fn remove(&self, address: &Address) -> Option<Arc<Link>> {
        let l = &mut self.links.lock().unwrap().all;
        let i = l.iter().position(|e| &e.address == address)?;
        Some(l.swap_remove(i).link)
    }

    pub(crate) fn take_all(&self) -> Vec<(Address, Arc<Link>)> {
        let all = std::mem::take(&mut self.links.lock().unwrap().all);
        all.into_iter().map(|e| (e.address, e.link)).collect()
    }

    /// Live connections.
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
    /// back to [`PeerSet::pick`] picks the same link. Errors as `pick` does.
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
                Some(c) => last = Some(c),
            }
        }
        Err(Error::ConnectionLost(last.unwrap_or(LossCause::PeerClosed)))
    }

    /// The next live link, round-robin. `NotConnected` when nothing was ever connected; the
    /// last loss when every connection is gone.
    pub(crate) fn pick(&self) -> Result<Arc<Link>> {
        let mut guard = self.links.lock().unwrap();
        let Links { all: l, next } = &mut *guard;
        if l.is_empty() {
            return Err(Error::NotConnected);
        }
        let start = *next;
        *next = start.wrapping_add(1);
        let mut last = None;
        for i in 0..l.len() {
            let link = &l[(start + i) % l.len()].link;
            match link.loss() {
                None => return Ok(link.clone()),
                Some(c) => last = Some(c),
            }
        }
        Err(Error::ConnectionLost(last.unwrap_or(LossCause::PeerClosed)))
    }
}
