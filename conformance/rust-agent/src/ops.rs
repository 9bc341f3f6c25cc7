//! Every op of the control protocol (conformance/README.md §Ops), each one call of weida's
//! public API, on handles the runner names.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use weida::{
    Dropped, FanOut, Fingerprint, GuaranteeSet, Identity, Limits, Listener, Ordering,
    OutgoingTransfer, Peer, PendingReply, Publisher, Puller, Pusher, Requester, Runtime,
    RuntimeConfig, ServerTls, Subscriber, Surveyor, Trust,
};

use crate::body;
use crate::endpoints::{
    copy_json, message_json, serve_answering, serve_bus, serve_collector, serve_dialing_puller,
    serve_pair, serve_puller, serve_subscriber, Answering, PullerMode, ReplierMode,
};
use crate::protocol::{bool_arg, metadata_arg, str_arg, u64_arg, Failure, Out};

/// A dialling endpoint.
#[derive(Clone)]
enum Dialling {
    Requester(Arc<Requester>),
    Pusher(Arc<Pusher>),
    Subscriber(Arc<Subscriber>),
    Peer(Arc<Peer>),
    Surveyor(Arc<Surveyor>),
    Bus(Arc<weida::Bus>),
    Publisher(Arc<weida::DialingPublisher>),
    /// A pair, dialling or bound (a bound one is kept here for `send`; it does not dial).
    Pair(Arc<weida::Pair>),
    /// A puller that dials bound pushers.
    Puller(Arc<weida::DialingPuller>),
    /// A bound pusher (kept here for `send`; it does not dial).
    BoundPusher(Arc<weida::BoundPusher>),
}

#[derive(Default)]
struct Handles {
    /// Every name in use, whatever it names: a name is never reused within one agent.
    names: HashSet<String>,
    /// A runtime and the identity it was made with (a listener with `require_client` presents it).
    runtimes: HashMap<String, (Runtime, Identity)>,
    listeners: HashMap<String, Listener>,
    dialling: HashMap<String, Dialling>,
    /// Each dialling endpoint's events, read from its making on (the `event` op).
    events: HashMap<String, Arc<tokio::sync::Mutex<weida::PeerEvents>>>,
    /// Pullers in `manual` mode, for the `recv` op.
    pullers: HashMap<String, Arc<Puller>>,
    transfers: HashMap<String, OutgoingTransfer>,
    replies: HashMap<String, PendingReply>,
    publishers: HashMap<String, Arc<Publisher>>,
    /// Bound subscribers (collectors), for `subscribe` and `unsubscribe`.
    collectors: HashMap<String, Arc<weida::BoundSubscriber>>,
    /// Subscribers in `recv` mode whose loop starts at their first connect.
    unserved: HashSet<String>,
    fanouts: HashMap<String, FanOut>,
    /// Handler registrations (docs/SERVICES.md), for `service_counters`.
    services: HashMap<String, Arc<weida::service::Registration>>,
}

pub(crate) struct Agent {
    out: Out,
    handles: Mutex<Handles>,
}

fn missing(kind: &str, name: &str) -> Failure {
    Failure::bad(format!(
        "no {kind} named {name:?} (or it is in use by another op)"
    ))
}

impl Agent {
    pub(crate) fn new(out: Out) -> Self {
        Self {
            out,
            handles: Mutex::new(Handles::default()),
        }
    }

    /// Closes every runtime (standard input closed).
    pub(crate) fn shutdown_all(&self) {
        for (rt, _) in self.handles.lock().unwrap().runtimes.values() {
            rt.shutdown();
        }
    }

    fn claim(&self, name: &str) -> Result<(), Failure> {
        if name.is_empty() || !self.handles.lock().unwrap().names.insert(name.to_string()) {
            return Err(Failure::bad(format!(
                "handle name {name:?} is empty or taken"
            )));
        }
        Ok(())
    }

    fn runtime(&self, args: &Value) -> Result<(Runtime, Identity), Failure> {
        let name = str_arg(args, "runtime")?;
        self.handles
            .lock()
            .unwrap()
            .runtimes
            .get(name)
            .cloned()
            .ok_or_else(|| missing("runtime", name))
    }

    fn listener(&self, args: &Value) -> Result<Listener, Failure> {
        let name = str_arg(args, "listener")?;
        self.handles
            .lock()
            .unwrap()
            .listeners
            .get(name)
            .cloned()
            .ok_or_else(|| missing("listener", name))
    }

    fn dialling(&self, args: &Value) -> Result<Dialling, Failure> {
        let name = str_arg(args, "endpoint")?;
        self.handles
            .lock()
            .unwrap()
            .dialling
            .get(name)
            .cloned()
            .ok_or_else(|| missing("requester, pusher, subscriber or peer", name))
    }

    fn publisher(&self, args: &Value) -> Result<Arc<Publisher>, Failure> {
        let name = str_arg(args, "endpoint")?;
        self.handles
            .lock()
            .unwrap()
            .publishers
            .get(name)
            .cloned()
            .ok_or_else(|| missing("publisher", name))
    }

    fn collector(&self, args: &Value) -> Option<Arc<weida::BoundSubscriber>> {
        let name = args.get("endpoint").and_then(Value::as_str)?;
        self.handles.lock().unwrap().collectors.get(name).cloned()
    }

    fn subscriber(&self, args: &Value, key: &str) -> Result<Arc<Subscriber>, Failure> {
        let name = str_arg(args, key)?;
        match self.handles.lock().unwrap().dialling.get(name) {
            Some(Dialling::Subscriber(s)) => Ok(s.clone()),
            _ => Err(missing("subscriber", name)),
        }
    }

    fn take_transfer(&self, args: &Value) -> Result<(String, OutgoingTransfer), Failure> {
        let name = str_arg(args, "transfer")?;
        let t = self.handles.lock().unwrap().transfers.remove(name);
        t.map(|t| (name.to_string(), t))
            .ok_or_else(|| missing("transfer", name))
    }

    /// Carries out one op.
    pub(crate) async fn run(&self, op: &str, args: &Value) -> Result<Value, Failure> {
        match op {
            "hello" => Ok(json!({
                "protocol": 1,
                "language": "rust",
                "agent": "weida-conformance-agent",
                "weida": env!("CARGO_PKG_VERSION"),
            })),
            "runtime" => {
                let name = str_arg(args, "name")?;
                let mut cfg = RuntimeConfig::default();
                match args.get("identity") {
                    None | Some(Value::Null) => {}
                    Some(v) => {
                        let dir = v.get("dir").and_then(Value::as_str).ok_or_else(|| {
                            Failure::bad("identity is {\"dir\": path} or absent (ephemeral)")
                        })?;
                        cfg.identity = Identity::load_or_create(dir)?;
                    }
                }
                if let Some(t) = args.get("trust") {
                    cfg.trust = trust(t)?;
                }
                cfg.present_identity = bool_arg(args, "present_identity", true)?;
                cfg.limits = limits(args.get("limits"))?;
                cfg.send_timeout = u64_arg(args, "send_timeout_ms")?.map(Duration::from_millis);
                if let Some(n) = u64_arg(args, "lane_max_message")? {
                    cfg.lane_max_message = n as usize;
                }
                cfg.reconnect = reconnect(args.get("reconnect"))?;
                cfg.guarantees = GuaranteeSet {
                    ordering: match args.get("ordering").and_then(Value::as_str) {
                        None | Some("none") => Ordering::None,
                        Some("detect") => Ordering::Detect,
                        Some("reassemble") => Ordering::Reassemble,
                        Some(o) => return Err(Failure::bad(format!("unknown ordering {o:?}"))),
                    },
                    ..GuaranteeSet::default()
                };
                let identity = cfg.identity.clone();
                let rt = Runtime::new(cfg)?;
                let fingerprint = rt.fingerprint().to_string();
                self.claim(name)?;
                self.handles
                    .lock()
                    .unwrap()
                    .runtimes
                    .insert(name.to_string(), (rt, identity));
                Ok(json!({ "fingerprint": fingerprint }))
            }
            "bind" => {
                let (rt, identity) = self.runtime(args)?;
                let name = str_arg(args, "name")?;
                let address = str_arg(args, "address")?;
                let listener = match args.get("require_client") {
                    None | Some(Value::Null) => rt.bind(address).await?,
                    Some(t) => {
                        let tls = ServerTls::new(identity).require_client(trust(t)?);
                        rt.bind_with(address, tls).await?
                    }
                };
                let bound = listener.address().to_string();
                self.claim(name)?;
                let mut h = self.handles.lock().unwrap();
                // A listener's connections are events too (PATTERNS §1.8): `event` reads them
                // by its name.
                h.events.insert(
                    name.to_string(),
                    Arc::new(tokio::sync::Mutex::new(listener.events())),
                );
                h.listeners.insert(name.to_string(), listener);
                Ok(json!({ "address": bound }))
            }
            "close" => {
                self.listener(args)?.close();
                Ok(json!({}))
            }
            "shutdown" => {
                self.runtime(args)?.0.shutdown();
                Ok(json!({}))
            }
            "drain" => {
                let (rt, _) = self.runtime(args)?;
                let ms = u64_arg(args, "deadline_ms")?
                    .ok_or_else(|| Failure::bad("drain needs deadline_ms"))?;
                let d = rt.drain(Duration::from_millis(ms)).await;
                Ok(
                    json!({"delivered": d.delivered, "outstanding": d.outstanding, "unsent": d.unsent}),
                )
            }
            "counters" => {
                let c = self.runtime(args)?.0.counters();
                Ok(json!({
                    "streams_opened": c.streams_opened,
                    "streams_accepted": c.streams_accepted,
                    "streams_refused": c.streams_refused,
                    "bytes_sent": c.bytes_sent,
                    "bytes_received": c.bytes_received,
                    "connections_dialled": c.connections_dialled,
                    "connections_accepted": c.connections_accepted,
                    "receipts_delivered": c.receipts_delivered,
                    "receipts_failed": c.receipts_failed,
                    "copies_published": c.copies_published,
                    "lane_messages_sent": c.lane_messages_sent,
                    "lane_messages_received": c.lane_messages_received,
                    "lane_messages_lost": c.lane_messages_lost,
                    "outbox_queued": c.outbox_queued,
                    "outbox_written": c.outbox_written,
                    "outbox_dropped": c.outbox_dropped,
                    "outbox_abandoned": c.outbox_abandoned,
                }))
            }
            "replier" | "respondent" | "acceptor" => {
                let listener = self.listener(args)?;
                let name = str_arg(args, "name")?;
                let mode = ReplierMode::parse(str_arg(args, "mode")?)?;
                let path = str_arg(args, "path")?;
                let opts = endpoint_options(args)?;
                let endpoint = match op {
                    "replier" => Answering::Replier(listener.replier_with(path, &opts)?),
                    // A respondent is a replier by another name.
                    "respondent" => Answering::Replier(listener.respondent_with(path, &opts)?),
                    _ => Answering::Acceptor(listener.acceptor_with(path, &opts)?),
                };
                let address = endpoint.address();
                self.claim(name)?;
                serve_answering(
                    endpoint,
                    name.to_string(),
                    mode,
                    reason(args),
                    self.out.clone(),
                );
                Ok(json!({ "address": address }))
            }
            "puller" => {
                let listener = self.listener(args)?;
                let name = str_arg(args, "name")?;
                let mode = PullerMode::parse(str_arg(args, "mode")?)?;
                let opts = endpoint_options(args)?;
                let puller = Arc::new(listener.puller_with(str_arg(args, "path")?, &opts)?);
                let address = puller.address().to_string();
                self.claim(name)?;
                if mode == PullerMode::Manual {
                    self.handles
                        .lock()
                        .unwrap()
                        .pullers
                        .insert(name.to_string(), puller);
                } else {
                    serve_puller(puller, name.to_string(), mode, self.out.clone());
                }
                Ok(json!({ "address": address }))
            }
            "requester" | "surveyor" | "pusher" | "peer" => {
                let (rt, _) = self.runtime(args)?;
                let name = str_arg(args, "name")?;
                self.claim(name)?;
                let opts = endpoint_options(args)?;
                let (d, events) = match op {
                    "requester" => {
                        let r = rt.requester_with(&opts)?;
                        let e = r.events();
                        (Dialling::Requester(Arc::new(r)), e)
                    }
                    "surveyor" => {
                        let s = rt.surveyor_with(&opts)?;
                        let e = s.events();
                        (Dialling::Surveyor(Arc::new(s)), e)
                    }
                    "pusher" => {
                        let p = rt.pusher_with(&opts)?;
                        let e = p.events();
                        (Dialling::Pusher(Arc::new(p)), e)
                    }
                    _ => {
                        let p = rt.peer_with(&opts)?;
                        let e = p.events();
                        (Dialling::Peer(Arc::new(p)), e)
                    }
                };
                let mut h = self.handles.lock().unwrap();
                h.dialling.insert(name.to_string(), d);
                h.events
                    .insert(name.to_string(), Arc::new(tokio::sync::Mutex::new(events)));
                Ok(json!({}))
            }
            "connect" => {
                let address = str_arg(args, "address")?;
                let wait = bool_arg(args, "wait", true)?;
                let count = match self.dialling(args)? {
                    Dialling::Requester(r) => {
                        match wait {
                            true => r.connect(address).await?,
                            false => r.connect_later(address).await?,
                        }
                        r.peer_count()
                    }
                    Dialling::Pusher(p) => {
                        match wait {
                            true => p.connect(address).await?,
                            false => p.connect_later(address).await?,
                        }
                        p.peer_count()
                    }
                    Dialling::Subscriber(s) => {
                        match wait {
                            true => s.connect(address).await?,
                            false => s.connect_later(address).await?,
                        }
                        let name = str_arg(args, "endpoint")?;
                        if self.handles.lock().unwrap().unserved.remove(name) {
                            serve_subscriber(s.clone(), name.to_string(), self.out.clone());
                        }
                        s.peer_count()
                    }
                    Dialling::Peer(p) => {
                        match wait {
                            true => p.connect(address).await?,
                            false => p.connect_later(address).await?,
                        }
                        p.peer_count()
                    }
                    Dialling::Surveyor(s) => {
                        match wait {
                            true => s.connect(address).await?,
                            false => s.connect_later(address).await?,
                        }
                        s.peer_count()
                    }
                    Dialling::Bus(b) => {
                        match wait {
                            true => b.connect(address).await?,
                            false => b.connect_later(address).await?,
                        }
                        b.peer_count()
                    }
                    Dialling::Publisher(p) => {
                        match wait {
                            true => p.connect(address).await?,
                            false => p.connect_later(address).await?,
                        }
                        p.peer_count()
                    }
                    Dialling::Pair(p) => {
                        match wait {
                            true => p.connect(address).await?,
                            false => p.connect_later(address).await?,
                        }
                        p.peer_count()
                    }
                    Dialling::Puller(p) => {
                        match wait {
                            true => p.connect(address).await?,
                            false => p.connect_later(address).await?,
                        }
                        p.peer_count()
                    }
                    Dialling::BoundPusher(_) => {
                        return Err(Failure::bad("a bound pusher does not dial"))
                    }
                };
                Ok(json!({ "peer_count": count }))
            }
            "event" => {
                let name = str_arg(args, "endpoint")?;
                let kind = str_arg(args, "kind")?;
                let between: Vec<String> = match args.get("between") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(v) => serde_json::from_value(v.clone())
                        .map_err(|_| Failure::bad("between is a list of event kinds"))?,
                };
                let events = self
                    .handles
                    .lock()
                    .unwrap()
                    .events
                    .get(name)
                    .cloned()
                    .ok_or_else(|| missing("dialling endpoint or listener", name))?;
                let mut events = events.lock().await;
                loop {
                    let e = match events.next().await {
                        None => return Err(Failure::bad("the endpoint is gone")),
                        Some(Ok(e)) => event_json(&e),
                        Some(Err(m)) => json!({"kind": "missed", "missed": m.0}),
                    };
                    if e["kind"] == kind {
                        return Ok(e);
                    }
                    if !between.iter().any(|b| e["kind"] == b.as_str()) {
                        return Err(Failure::bad(format!("unexpected event {e} before {kind}")));
                    }
                }
            }
            "disconnect" => {
                let address = str_arg(args, "address")?;
                let removed = match self.dialling(args)? {
                    Dialling::Requester(r) => r.disconnect(address)?,
                    Dialling::Pusher(p) => p.disconnect(address)?,
                    Dialling::Subscriber(s) => s.disconnect(address)?,
                    Dialling::Peer(p) => p.disconnect(address)?,
                    Dialling::Surveyor(s) => s.disconnect(address)?,
                    Dialling::Bus(b) => b.disconnect(address)?,
                    Dialling::Publisher(p) => p.disconnect(address)?,
                    Dialling::Pair(p) => p.disconnect(address)?,
                    Dialling::Puller(p) => p.disconnect(address)?,
                    Dialling::BoundPusher(_) => false,
                };
                Ok(json!({ "removed": removed }))
            }
            "peer_count" => {
                let count = match self.dialling(args)? {
                    Dialling::Requester(r) => r.peer_count(),
                    Dialling::Pusher(p) => p.peer_count(),
                    Dialling::Subscriber(s) => s.peer_count(),
                    Dialling::Peer(p) => p.peer_count(),
                    Dialling::Surveyor(s) => s.peer_count(),
                    Dialling::Bus(b) => b.peer_count(),
                    Dialling::Publisher(p) => p.peer_count(),
                    Dialling::Pair(p) => p.peer_count(),
                    Dialling::Puller(p) => p.peer_count(),
                    Dialling::BoundPusher(p) => p.peer_count(),
                };
                Ok(json!({ "peer_count": count }))
            }
            "request" => {
                let Dialling::Requester(r) = self.dialling(args)? else {
                    return Err(Failure::bad("request needs a requester"));
                };
                let body = body::make(args.get("body").unwrap_or(&Value::Null))?;
                let m = r.request_with(metadata_arg(args)?, body).await?;
                Ok(message_json(&m))
            }
            "survey" => {
                // Asks, then reads every answer until the run ends: how many were asked,
                // answered, the codes of those that failed (sorted), and the late count.
                let Dialling::Surveyor(s) = self.dialling(args)? else {
                    return Err(Failure::bad("survey needs a surveyor"));
                };
                let body = body::make(args.get("body").unwrap_or(&Value::Null))?;
                let deadline = args
                    .get("deadline_ms")
                    .and_then(Value::as_f64)
                    .filter(|d| *d > 0.0)
                    .ok_or_else(|| Failure::bad("deadline_ms is a positive number"))?;
                let run = s
                    .survey_with(
                        metadata_arg(args)?,
                        body,
                        Duration::from_secs_f64(deadline / 1000.0),
                    )
                    .await?;
                let (mut answered, mut errors) = (0, Vec::new());
                while let Some(a) = run.next().await {
                    match a {
                        Ok(_) => answered += 1,
                        Err(e) => errors.push(e.code().as_str().to_string()),
                    }
                }
                errors.sort();
                Ok(json!({
                    "respondents": run.respondents(),
                    "answered": answered,
                    "errors": errors,
                    "late": run.late(),
                }))
            }
            "send" => {
                let body = body::make(args.get("body").unwrap_or(&Value::Null))?;
                match self.dialling(args)? {
                    Dialling::Bus(b) => {
                        let queued = b.send_with(metadata_arg(args)?, body).await?;
                        Ok(json!({ "queued": queued }))
                    }
                    Dialling::Pusher(p) => {
                        p.send_with(metadata_arg(args)?, body).await?;
                        Ok(json!({}))
                    }
                    Dialling::Pair(p) => {
                        p.send_with(metadata_arg(args)?, body).await?;
                        Ok(json!({}))
                    }
                    Dialling::BoundPusher(p) => {
                        p.send_with(metadata_arg(args)?, body).await?;
                        Ok(json!({}))
                    }
                    _ => Err(Failure::bad("send needs a pusher, a bus member or a pair")),
                }
            }
            "bus" => {
                // A bus member: dialling (`connect`, `send`) and bound, received as a `recv`
                // puller is.
                let (rt, _) = self.runtime(args)?;
                let listener = self.listener(args)?;
                let name = str_arg(args, "name")?;
                let opts = endpoint_options(args)?;
                let bus = Arc::new(rt.bus_with(&listener, str_arg(args, "path")?, &opts)?);
                let address = bus.address().to_string();
                self.claim(name)?;
                let events = bus.events();
                let mut h = self.handles.lock().unwrap();
                h.dialling
                    .insert(name.to_string(), Dialling::Bus(bus.clone()));
                h.events
                    .insert(name.to_string(), Arc::new(tokio::sync::Mutex::new(events)));
                drop(h);
                serve_bus(bus, name.to_string(), self.out.clone());
                Ok(json!({ "address": address }))
            }
            "try_send" => {
                let Dialling::Pusher(p) = self.dialling(args)? else {
                    return Err(Failure::bad("try_send needs a pusher"));
                };
                let body = body::make(args.get("body").unwrap_or(&Value::Null))?;
                Ok(json!({"sent": p.try_send(body)?.is_none()}))
            }
            "send_many" => {
                let Dialling::Pusher(p) = self.dialling(args)? else {
                    return Err(Failure::bad("send_many needs a pusher"));
                };
                let specs = args.get("bodies").and_then(Value::as_array);
                let specs =
                    specs.ok_or_else(|| Failure::bad("send_many needs a list of bodies"))?;
                let bodies = specs
                    .iter()
                    .map(body::make)
                    .collect::<Result<Vec<_>, _>>()?;
                let (sent, r) = p.send_many(bodies).await;
                r?;
                Ok(json!({ "sent": sent }))
            }
            "open" => {
                let meta = metadata_arg(args)?;
                let tname = str_arg(args, "transfer")?;
                // A pusher opens a one-way stream, a requester an exchange, and a peer either:
                // an exchange when the step names its `reply`.
                let (t, reply) = match self.dialling(args)? {
                    Dialling::Pusher(p) => (p.open(meta).await?, None),
                    Dialling::Peer(p) if args.get("reply").is_none() => (p.open(meta).await?, None),
                    Dialling::Peer(p) => {
                        let rname = str_arg(args, "reply")?;
                        let (t, r) = p.exchange(meta).await?;
                        (t, Some((rname, r)))
                    }
                    Dialling::Requester(r) => {
                        let rname = str_arg(args, "reply")?;
                        let (t, r) = r.open(meta).await?;
                        (t, Some((rname, r)))
                    }
                    Dialling::Subscriber(_)
                    | Dialling::Surveyor(_)
                    | Dialling::Bus(_)
                    | Dialling::Publisher(_)
                    | Dialling::Pair(_)
                    | Dialling::Puller(_)
                    | Dialling::BoundPusher(_) => {
                        return Err(Failure::bad("open needs a pusher, requester or peer"))
                    }
                };
                self.claim(tname)?;
                if let Some((rname, _)) = &reply {
                    self.claim(rname)?;
                }
                let mut h = self.handles.lock().unwrap();
                h.transfers.insert(tname.to_string(), t);
                if let Some((rname, r)) = reply {
                    h.replies.insert(rname.to_string(), r);
                }
                Ok(json!({}))
            }
            "write" => {
                let bytes = body::make(args.get("body").unwrap_or(&Value::Null))?;
                let chunk = u64_arg(args, "chunk")?.unwrap_or(64 * 1024).max(1) as usize;
                let (name, mut t) = self.take_transfer(args)?;
                let mut outcome = Ok(());
                let mut at = 0;
                while at < bytes.len() && outcome.is_ok() {
                    let end = (at + chunk).min(bytes.len());
                    outcome = t.write(bytes.slice(at..end)).await;
                    at = end;
                }
                // Kept after a failed write too, so a scenario can still cancel it.
                self.handles.lock().unwrap().transfers.insert(name, t);
                outcome?;
                Ok(json!({ "written": bytes.len() }))
            }
            "finish" => {
                let (_, t) = self.take_transfer(args)?;
                let delivery = t.finish().await?;
                if bool_arg(args, "delivered", false)? {
                    delivery.delivered().await?;
                    Ok(json!({ "delivered": true }))
                } else {
                    Ok(json!({}))
                }
            }
            "cancel" => {
                let (_, t) = self.take_transfer(args)?;
                t.cancel();
                Ok(json!({}))
            }
            "reply_body" => {
                let name = str_arg(args, "reply")?;
                let reply = self.handles.lock().unwrap().replies.remove(name);
                let reply = reply.ok_or_else(|| missing("pending reply", name))?;
                Ok(message_json(&reply.body().await?))
            }
            "recv" => {
                let name = str_arg(args, "puller")?;
                let p = self.handles.lock().unwrap().pullers.get(name).cloned();
                let p = p.ok_or_else(|| missing("manual puller", name))?;
                Ok(message_json(&p.recv().await?))
            }
            "recv_many" => {
                let name = str_arg(args, "puller")?;
                let p = self.handles.lock().unwrap().pullers.get(name).cloned();
                let p = p.ok_or_else(|| missing("manual puller", name))?;
                let count = u64_arg(args, "count")?;
                let count = count.ok_or_else(|| Failure::bad("recv_many needs a count"))? as usize;
                let max = u64_arg(args, "max")?.unwrap_or(64).max(1) as usize;
                // Batches until `count`, each at most what is left: none taken beyond it.
                let (mut messages, mut batches) = (Vec::with_capacity(count), 0);
                while messages.len() < count {
                    let batch = p.recv_many(max.min(count - messages.len())).await?;
                    batches += 1;
                    messages.extend(batch.iter().map(message_json));
                }
                Ok(json!({ "messages": messages, "batches": batches }))
            }
            "publisher" => {
                let listener = self.listener(args)?;
                let name = str_arg(args, "name")?;
                let p = listener.publisher(str_arg(args, "path")?)?;
                let address = p.address().to_string();
                self.claim(name)?;
                self.handles
                    .lock()
                    .unwrap()
                    .publishers
                    .insert(name.to_string(), Arc::new(p));
                Ok(json!({ "address": address }))
            }
            "subscriber" => {
                let (rt, _) = self.runtime(args)?;
                let name = str_arg(args, "name")?;
                let manual = match str_arg(args, "mode")? {
                    "recv" => false,
                    "manual" => true,
                    m => return Err(Failure::bad(format!("unknown subscriber mode {m:?}"))),
                };
                self.claim(name)?;
                let s = Arc::new(rt.subscriber());
                let mut h = self.handles.lock().unwrap();
                if !manual {
                    h.unserved.insert(name.to_string());
                }
                h.events.insert(
                    name.to_string(),
                    Arc::new(tokio::sync::Mutex::new(s.events())),
                );
                h.dialling.insert(name.to_string(), Dialling::Subscriber(s));
                Ok(json!({}))
            }
            "pair" => {
                // A pair: bound with `listener` and `path`, else dialling through `runtime`;
                // received as a `recv` puller is, from its making on.
                let name = str_arg(args, "name")?;
                let opts = endpoint_options(args)?;
                let (pair, address) = match args.get("listener") {
                    Some(_) => {
                        let listener = self.listener(args)?;
                        let p = listener.pair_with(str_arg(args, "path")?, &opts)?;
                        let a = p.address().map(|a| a.to_string());
                        (p, a)
                    }
                    None => {
                        let (rt, _) = self.runtime(args)?;
                        (rt.pair_with(&opts)?, None)
                    }
                };
                let pair = Arc::new(pair);
                self.claim(name)?;
                let mut h = self.handles.lock().unwrap();
                if let Ok(events) = pair.events() {
                    h.events
                        .insert(name.to_string(), Arc::new(tokio::sync::Mutex::new(events)));
                }
                h.dialling
                    .insert(name.to_string(), Dialling::Pair(pair.clone()));
                drop(h);
                serve_pair(pair, name.to_string(), self.out.clone());
                Ok(match address {
                    Some(a) => json!({ "address": a }),
                    None => json!({}),
                })
            }
            "service_queue" => {
                // A queue registration whose handler emits `handled` (body, attempt, path) for
                // each job and retries the bodies `retry` lists (their text), else is done.
                let (rt, _) = self.runtime(args)?;
                let listener = self.listener(args)?;
                let name = str_arg(args, "name")?;
                let mut b =
                    weida::service::Service::new(&rt).queue(&listener, str_arg(args, "path")?)?;
                if let Some(n) = u64_arg(args, "max_attempts")? {
                    b = b.max_attempts(
                        u32::try_from(n).map_err(|_| Failure::bad("max_attempts is too large"))?,
                    );
                }
                if let Some(n) = u64_arg(args, "concurrency")? {
                    b = b.concurrency(
                        u32::try_from(n).map_err(|_| Failure::bad("concurrency is too large"))?,
                    );
                }
                if let Some(d) = args.get("dead_letter").and_then(Value::as_str) {
                    b = b.dead_letter(d);
                }
                let retry: HashSet<String> = args
                    .get("retry")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                let reg = Arc::new(b.start().await?);
                let address = reg.address().map(|a| a.to_string());
                self.claim(name)?;
                self.handles
                    .lock()
                    .unwrap()
                    .services
                    .insert(name.to_string(), reg.clone());
                let (handle, out) = (name.to_string(), self.out.clone());
                tokio::spawn(async move {
                    let retry = Arc::new(retry);
                    let _ = reg
                        .run(move |m, attempt| {
                            let mut f = crate::protocol::meta_fields(&m.meta);
                            f.insert("body".into(), body::summary(&m.body));
                            f.insert("attempt".into(), attempt.into());
                            out.event("handled", &handle, f);
                            let again = retry.contains(String::from_utf8_lossy(&m.body).as_ref());
                            async move {
                                Ok::<_, String>(if again {
                                    weida::service::Outcome::Retry
                                } else {
                                    weida::service::Outcome::Done
                                })
                            }
                        })
                        .await;
                });
                Ok(json!({ "address": address }))
            }
            "service_counters" => {
                let name = str_arg(args, "endpoint")?;
                let reg = self
                    .handles
                    .lock()
                    .unwrap()
                    .services
                    .get(name)
                    .cloned()
                    .ok_or_else(|| Failure::bad(format!("no service named {name:?}")))?;
                let c = reg.counters();
                Ok(json!({
                    "handled": c.handled,
                    "retried": c.retried,
                    "dead_lettered": c.dead_lettered,
                    "dropped": c.dropped,
                    "failed": c.failed,
                }))
            }
            "bound_pusher" => {
                // A pusher bound at `path`: it deals to the dialling pullers that claimed it.
                let listener = self.listener(args)?;
                let name = str_arg(args, "name")?;
                let opts = endpoint_options(args)?;
                let p = Arc::new(listener.pusher_with(str_arg(args, "path")?, &opts)?);
                let address = p.address().to_string();
                self.claim(name)?;
                self.handles
                    .lock()
                    .unwrap()
                    .dialling
                    .insert(name.to_string(), Dialling::BoundPusher(p));
                Ok(json!({ "address": address }))
            }
            "dialing_puller" => {
                // A puller that dials bound pushers, received as a `recv` puller is.
                let (rt, _) = self.runtime(args)?;
                let name = str_arg(args, "name")?;
                let p = Arc::new(rt.puller_with(&endpoint_options(args)?)?);
                self.claim(name)?;
                let mut h = self.handles.lock().unwrap();
                h.events.insert(
                    name.to_string(),
                    Arc::new(tokio::sync::Mutex::new(p.events())),
                );
                h.dialling
                    .insert(name.to_string(), Dialling::Puller(p.clone()));
                drop(h);
                serve_dialing_puller(p, name.to_string(), self.out.clone());
                Ok(json!({}))
            }
            "dialing_publisher" => {
                // A publisher that dials bound subscribers (collectors).
                let (rt, _) = self.runtime(args)?;
                let name = str_arg(args, "name")?;
                let p = Arc::new(rt.publisher_with(&endpoint_options(args)?)?);
                self.claim(name)?;
                let mut h = self.handles.lock().unwrap();
                h.events.insert(
                    name.to_string(),
                    Arc::new(tokio::sync::Mutex::new(p.events())),
                );
                h.dialling.insert(name.to_string(), Dialling::Publisher(p));
                Ok(json!({}))
            }
            "bound_subscriber" => {
                // A collector: received as a subscriber's copies are, from its binding on.
                let listener = self.listener(args)?;
                let name = str_arg(args, "name")?;
                let opts = endpoint_options(args)?;
                let c = Arc::new(listener.subscriber_with(str_arg(args, "path")?, &opts)?);
                let address = c.address().to_string();
                self.claim(name)?;
                self.handles
                    .lock()
                    .unwrap()
                    .collectors
                    .insert(name.to_string(), c.clone());
                serve_collector(c, name.to_string(), self.out.clone());
                Ok(json!({ "address": address }))
            }
            "subscribe" => {
                if let Some(c) = self.collector(args) {
                    c.subscribe(str_arg(args, "filter")?)?;
                    return Ok(json!({}));
                }
                let s = self.subscriber(args, "endpoint")?;
                s.subscribe(str_arg(args, "filter")?).await?;
                Ok(json!({}))
            }
            "unsubscribe" => {
                if let Some(c) = self.collector(args) {
                    let removed = c.unsubscribe(str_arg(args, "filter")?)?;
                    return Ok(json!({ "removed": removed }));
                }
                let s = self.subscriber(args, "endpoint")?;
                let removed = s.unsubscribe(str_arg(args, "filter")?).await?;
                Ok(json!({ "removed": removed }))
            }
            "receive" => {
                let s = self.subscriber(args, "subscriber")?;
                Ok(copy_json(&s.recv().await?))
            }
            "queued" => {
                let s = self.subscriber(args, "subscriber")?;
                Ok(json!({ "queued": s.queued() }))
            }
            "publish" => {
                if let Ok(Dialling::Publisher(p)) = self.dialling(args) {
                    let body = body::make(args.get("body").unwrap_or(&Value::Null))?;
                    let queued = p.publish(str_arg(args, "topic")?, body)?;
                    return Ok(json!({ "queued": queued }));
                }
                let p = self.publisher(args)?;
                let body = body::make(args.get("body").unwrap_or(&Value::Null))?;
                let queued = p.publish(str_arg(args, "topic")?, body)?;
                Ok(json!({ "queued": queued }))
            }
            "dropped" => {
                if let Ok(Dialling::Publisher(p)) = self.dialling(args) {
                    return Ok(dropped_json(&p.dropped()));
                }
                let p = self.publisher(args)?;
                let d = match args.get("topic").and_then(Value::as_str) {
                    Some(t) => p.dropped_on(t),
                    None => p.dropped(),
                };
                Ok(dropped_json(&d))
            }
            "subscriber_count" => {
                let p = self.publisher(args)?;
                Ok(json!({ "subscriber_count": p.subscriber_count() }))
            }
            "fanout" => {
                let p = self.publisher(args)?;
                let name = str_arg(args, "fanout")?;
                let f = p.open(str_arg(args, "topic")?)?;
                let copies = f.copies();
                self.claim(name)?;
                self.handles
                    .lock()
                    .unwrap()
                    .fanouts
                    .insert(name.to_string(), f);
                Ok(json!({ "copies": copies }))
            }
            "fanout_write" => {
                let name = str_arg(args, "fanout")?;
                let bytes = body::make(args.get("body").unwrap_or(&Value::Null))?;
                let chunk = u64_arg(args, "chunk")?.unwrap_or(64 * 1024).max(1) as usize;
                let now = bool_arg(args, "now", false)?;
                let f = self.handles.lock().unwrap().fanouts.remove(name);
                let mut f = f.ok_or_else(|| missing("fan-out", name))?;
                let mut outcome = Ok(f.copies());
                let mut at = 0;
                while at < bytes.len() && outcome.is_ok() {
                    let end = (at + chunk).min(bytes.len());
                    let c = bytes.slice(at..end);
                    outcome = if now {
                        f.write_now(c)
                    } else {
                        f.write(c).await
                    };
                    at = end;
                }
                self.handles
                    .lock()
                    .unwrap()
                    .fanouts
                    .insert(name.to_string(), f);
                Ok(json!({ "copies": outcome? }))
            }
            "fanout_finish" => {
                let name = str_arg(args, "fanout")?;
                let f = self.handles.lock().unwrap().fanouts.remove(name);
                let f = f.ok_or_else(|| missing("fan-out", name))?;
                Ok(json!({ "copies": f.finish() }))
            }
            other => Err(Failure::bad(format!("unknown op {other:?}"))),
        }
    }
}

/// A `reject` mode's reason (default "rejected").
fn reason(args: &Value) -> String {
    args.get("reason")
        .and_then(Value::as_str)
        .unwrap_or("rejected")
        .to_string()
}

fn dropped_json(d: &Dropped) -> Value {
    json!({
        "queue_full": d.queue_full,
        "byte_budget": d.byte_budget,
        "reverse_pool_empty": d.reverse_pool_empty,
        "dead_subscriber": d.dead_subscriber,
        "refused": d.refused,
        "total": d.total(),
    })
}

/// `"address"`, `"unverified"` or `{"pinned": ["sha256:…", …]}`.
fn trust(v: &Value) -> Result<Trust, Failure> {
    match v {
        Value::String(s) if s == "address" => Ok(Trust::address()),
        Value::String(s) if s == "unverified" => Ok(Trust::unverified()),
        Value::Object(o) => {
            let pins = o
                .get("pinned")
                .and_then(Value::as_array)
                .ok_or_else(|| Failure::bad("trust object is {\"pinned\": [...]}"))?;
            let mut fps = Vec::new();
            for p in pins {
                let s = p
                    .as_str()
                    .ok_or_else(|| Failure::bad("a pin is a string"))?;
                fps.push(s.parse::<Fingerprint>()?);
            }
            Ok(Trust::pinned(fps))
        }
        _ => Err(Failure::bad(format!("unknown trust {v}"))),
    }
}

/// Limits from `{"idle_timeout_ms": …, "keep_alive_ms": null, "endpoint_queue": …, …}`.
/// A runtime step's `reconnect`; absent, the runtime does not redial (the scenarios written
/// before redial assert that behaviour).
fn reconnect(v: Option<&Value>) -> Result<weida::ReconnectPolicy, Failure> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(weida::ReconnectPolicy::never());
    };
    let map = v
        .as_object()
        .ok_or_else(|| Failure::bad("reconnect is an object"))?;
    let mut p = weida::ReconnectPolicy::default();
    for (k, val) in map {
        if k == "jitter" {
            p.jitter = val
                .as_bool()
                .ok_or_else(|| Failure::bad("reconnect.jitter is a boolean"))?;
            continue;
        }
        if val.is_null() {
            continue;
        }
        let n = val
            .as_u64()
            .ok_or_else(|| Failure::bad(format!("reconnect.{k} is a non-negative integer")))?;
        match k.as_str() {
            "initial_ms" => p.initial = Duration::from_millis(n),
            "max_ms" => p.max = Duration::from_millis(n),
            "give_up_after_ms" => p.give_up = weida::GiveUp::After(Duration::from_millis(n)),
            "give_up_after_attempts" => p.give_up = weida::GiveUp::AfterAttempts(n as u32),
            _ => return Err(Failure::bad(format!("unknown reconnect option {k:?}"))),
        }
    }
    Ok(p)
}

/// A `PeerEvent` as the `event` op returns it: its kind and fields, snake_case.
fn event_json(e: &weida::PeerEvent) -> Value {
    use weida::PeerEvent::*;
    match e {
        Connected { url, fingerprint } => json!({
            "kind": e.name(), "url": url,
            "fingerprint": fingerprint.map(|f| f.to_string()),
        }),
        Lost { url, cause } | GaveUp { url, cause } => {
            json!({"kind": e.name(), "url": url, "cause": cause.name()})
        }
        Retrying {
            url,
            attempt,
            delay,
        } => json!({
            "kind": e.name(), "url": url, "attempt": attempt,
            "delay_ms": delay.as_millis() as u64,
        }),
        _ => json!({"kind": e.name()}),
    }
}

/// An endpoint's own bounds from the step's `options`.
fn endpoint_options(args: &Value) -> Result<weida::EndpointOptions, Failure> {
    let mut o = weida::EndpointOptions::new();
    let Some(v) = args.get("options").filter(|v| !v.is_null()) else {
        return Ok(o);
    };
    let map = v
        .as_object()
        .ok_or_else(|| Failure::bad("options is an object"))?;
    for (k, val) in map {
        if k == "send_timeout_ms" && val.is_null() {
            o = o.send_timeout(None);
            continue;
        }
        if k == "reconnect" {
            o = o.reconnect(reconnect(Some(val))?);
            continue;
        }
        if k == "outbox_full" {
            let f = val
                .as_str()
                .and_then(weida::OutboxFull::from_name)
                .ok_or_else(|| Failure::bad("options.outbox_full is block, drop or reject"))?;
            o = o.outbox_full(f);
            continue;
        }
        let n = val
            .as_u64()
            .ok_or_else(|| Failure::bad(format!("options.{k} is a non-negative integer")))?;
        o = match k.as_str() {
            "max_collected_body" => o.max_collected_body(n),
            "endpoint_queue" => o.endpoint_queue(n as usize),
            "send_timeout_ms" => o.send_timeout(Some(Duration::from_millis(n))),
            "outbox_messages" => o.outbox_messages(n as usize),
            "outbox_bytes" => o.outbox_bytes(n as usize),
            _ => return Err(Failure::bad(format!("unknown endpoint option {k:?}"))),
        };
    }
    Ok(o)
}

fn limits(v: Option<&Value>) -> Result<Limits, Failure> {
    let mut l = Limits::default();
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(l);
    };
    let o = v
        .as_object()
        .ok_or_else(|| Failure::bad("limits is an object"))?;
    for (k, val) in o {
        let n = || {
            val.as_u64()
                .ok_or_else(|| Failure::bad(format!("limits.{k} is a non-negative integer")))
        };
        match k.as_str() {
            "stream_receive_window" => l.stream_receive_window = n()?,
            "connection_receive_window" => l.connection_receive_window = n()?,
            "send_window" => l.send_window = n()?,
            "max_concurrent_uni_streams" => l.max_concurrent_uni_streams = n()?,
            "max_concurrent_bidi_streams" => l.max_concurrent_bidi_streams = n()?,
            "max_local_streams" => l.max_local_streams = n()?,
            "endpoint_queue" => l.endpoint_queue = n()? as usize,
            "peer_share" => l.peer_share = n()? as usize,
            "max_header_size" => l.max_header_size = n()?,
            "max_collected_body" => l.max_collected_body = n()?,
            "idle_timeout_ms" => l.idle_timeout = Duration::from_millis(n()?),
            "subscriber_buffer_bytes" => l.subscriber_buffer_bytes = n()? as usize,
            "max_reorder_hold" => l.max_reorder_hold = n()? as usize,
            "max_parked_reverse" => l.max_parked_reverse = n()? as usize,
            "max_filters" => l.max_filters = n()? as usize,
            "fanout_wait_ms" => l.fanout_wait = Duration::from_millis(n()?),
            "header_timeout_ms" => l.header_timeout = Duration::from_millis(n()?),
            "connect_timeout_ms" => l.connect_timeout = Duration::from_millis(n()?),
            "body_idle_timeout_ms" => l.body_idle_timeout = Duration::from_millis(n()?),
            "max_udp_payload" => l.max_udp_payload = n()?,
            "max_connections" => l.max_connections = n()? as usize,
            "max_local_peer_connections" => l.max_local_peer_connections = n()? as usize,
            "keep_alive_ms" => {
                l.keep_alive = if val.is_null() {
                    None
                } else {
                    Some(Duration::from_millis(n()?))
                }
            }
            other => return Err(Failure::bad(format!("unknown limit {other:?}"))),
        }
    }
    Ok(l)
}
