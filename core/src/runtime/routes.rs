//! The routes of one listener: the endpoint bound at each path (its kind and its queue, or a
//! publisher), as dispatch finds them through [`Endpoints`].

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, RwLock};

use super::listener::ListenerInner;
use super::queue::{Sender, WeakSender};
use crate::connection::admission::RouteKind;
use crate::connection::dispatch::{EndpointQueue, Endpoints, Queued};
use crate::connection::reverse::{Claimable, Publication};

/// The endpoints of one listener, by path.
#[derive(Default)]
pub(crate) struct RouteTable {
    routes: RwLock<HashMap<String, Route>>,
}

/// What is bound at a path.
pub(crate) struct Route {
    pub(crate) kind: RouteKind,
    /// The endpoint's queue (every kind but a publisher).
    pub(crate) tx: Option<Sender<Queued>>,
    /// A publisher's subscribers.
    pub(crate) publication: Option<Arc<dyn Publication>>,
    /// A pair's claim.
    pub(crate) claim: Option<Arc<dyn Claimable>>,
    pub(crate) id: u64,
    /// The endpoint's `max_collected_body`: a lane frame above it is refused at dispatch,
    /// and an exchange's `take_body` collects up to it.
    pub(crate) max_body: u64,
}

impl RouteTable {
    /// Binds `path` to `route` unless it is bound: false when it is.
    pub(crate) fn insert(&self, path: &str, route: Route) -> bool {
        let mut routes = self.routes.write().unwrap();
        if routes.contains_key(path) {
            return false;
        }
        routes.insert(path.to_string(), route);
        true
    }

    /// Unbinds every path (the listener or the runtime closed): every endpoint's queue ends.
    pub(crate) fn clear(&self) {
        self.routes.write().unwrap().clear();
    }
}

impl Endpoints for RouteTable {
    type Queue = Sender<Queued>;

    fn find(&self, path: &str) -> Option<(RouteKind, Option<Sender<Queued>>, u64)> {
        let routes = self.routes.read().unwrap();
        routes.get(path).map(|r| (r.kind, r.tx.clone(), r.max_body))
    }

    fn publication(&self, path: &str) -> Option<Result<Arc<dyn Publication>, RouteKind>> {
        let routes = self.routes.read().unwrap();
        routes
            .get(path)
            .map(|r| r.publication.clone().ok_or(r.kind))
    }

    fn claimable(&self, path: &str) -> Option<Arc<dyn Claimable>> {
        let routes = self.routes.read().unwrap();
        routes.get(path).and_then(|r| r.claim.clone())
    }
}

impl EndpointQueue for Sender<Queued> {
    type Weak = WeakSender<Queued>;

    fn is_closed(&self) -> bool {
        Self::is_closed(self)
    }

    fn send(&self, item: Queued) -> impl Future<Output = Result<(), Queued>> + Send {
        Self::send(self, item)
    }

    fn send_many(
        &self,
        items: &mut VecDeque<Queued>,
    ) -> impl Future<Output = Result<(), ()>> + Send {
        Self::send_many(self, items)
    }

    fn downgrade(&self) -> WeakSender<Queued> {
        Self::downgrade(self)
    }

    fn upgrade(weak: &WeakSender<Queued>) -> Option<Self> {
        weak.upgrade()
    }
}

/// A bound path: the route goes when its endpoint drops (or closes).
pub(crate) struct RouteGuard {
    routes: Arc<RouteTable>,
    path: String,
    id: u64,
    // An endpoint keeps its listener bound: dropping the `Listener` handle while endpoints
    // live does not silently end them (`Listener::close` does, explicitly).
    _listener: Arc<ListenerInner>,
}

impl RouteGuard {
    pub(crate) fn new(
        routes: Arc<RouteTable>,
        path: &str,
        id: u64,
        listener: Arc<ListenerInner>,
    ) -> Self {
        Self {
            routes,
            path: path.to_string(),
            id,
            _listener: listener,
        }
    }

    /// Unbinds the path, if it is still this endpoint's (it may have been bound again).
    pub(crate) fn close(&self) {
        let mut routes = self.routes.routes.write().unwrap();
        if routes.get(&self.path).is_some_and(|r| r.id == self.id) {
            routes.remove(&self.path);
        }
    }
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.close();
    }
}
