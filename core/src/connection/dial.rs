//! Dialling: a connection to an address on any transport and this side of its HELLO
//! handshake (PROTOCOL.md §3.2), then the task that reads the listener's control frames for the
//! link's life.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::context::Context;
use super::control::ControlReader;
use super::handshake::{conclude, our_hello, unhonoured, Flow, Side};
use super::link::Link;
use crate::address::{Address, Target};
use crate::config::{Limits, RuntimeConfig};
use crate::error::{Error, Limit, Result, Unanswered};
use crate::security::tls;
use crate::security::trust::ClientTls;
use crate::transport::{inproc, quic, unix, Conn};
use crate::wire::{Code, ControlFrame, Session, StreamType};

/// What dialling needs beyond the [`Context`]: this side's TLS terms, and the QUIC endpoint
/// every dialled QUIC connection of the runtime shares (made on first use).
pub(crate) struct Dialler {
    client_tls: ClientTls,
    quic_client: tokio::sync::OnceCell<quic::Client>,
}

impl Dialler {
    pub(crate) fn new(config: &RuntimeConfig) -> Self {
        let client_tls = if config.present_identity {
            ClientTls::new(config.identity.clone(), config.trust.clone())
        } else {
            ClientTls::anonymous(config.trust.clone())
        };
        Self {
            client_tls,
            quic_client: tokio::sync::OnceCell::new(),
        }
    }

    async fn quic_client(&self, ctx: &Context) -> Result<&quic::Client> {
        self.quic_client
            .get_or_try_init(|| async { quic::client_endpoint(ctx.config.udp_buffer, &ctx.limits) })
            .await
    }

    /// Closes the QUIC endpoint, if one was made: every QUIC connection dialled ends.
    pub(crate) fn close(&self) {
        if let Some(ep) = self.quic_client.get() {
            ep.close(Code::GoingAway, b"shutdown");
        }
    }

    /// Resolves once the QUIC endpoint, if one was made, has no connection left: after
    /// `close`, once every close has been sent. Cancel-safe.
    pub(crate) async fn idle(&self) {
        if let Some(ep) = self.quic_client.get() {
            ep.idle().await;
        }
    }

    /// Dials `address` and runs the HELLO handshake (PROTOCOL.md §3.2): a link to `path`, with
    /// `session` announced in this side's HELLO (a local-socket subscriber's parked
    /// connections), which offers and requires the ordering `flow` honours.
    pub(crate) async fn dial(
        &self,
        ctx: &Arc<Context>,
        address: &Address,
        path: Arc<str>,
        session: Option<Session>,
        flow: Flow,
    ) -> Result<Arc<Link>> {
        if let Some(e) = unhonoured(&ctx.config, flow) {
            return Err(e);
        }
        // Everything up to the listener's HELLO is bounded by `connect_timeout`: a dial to a
        // port where nothing listens must say so, not wait out the idle timeout.
        let within = ctx.limits.connect_timeout;
        let started = tokio::time::Instant::now();
        let place = place_of(address);
        let no_answer = |d| Error::Unreachable {
            address: place.clone(),
            why: Unanswered::NoAnswer(d),
        };
        let (conn, mut send, recv) = match address.target() {
            Target::Quic { host, port } => {
                let to = quic::resolve(host, *port).await?;
                let ep = self.quic_client(ctx).await?;
                let name =
                    tls::server_name(&host.to_string(), &self.client_tls, address.pin().copied());
                let connecting = ep.connect(
                    to,
                    &name,
                    address.pin().copied(),
                    &self.client_tls,
                    &ctx.limits,
                );
                let conn = match tokio::time::timeout(within, connecting).await {
                    // quinn gives up a handshake at the idle timeout, if that comes first.
                    Ok(Err(Error::Timeout { .. })) => {
                        return Err(no_answer(within.min(ctx.limits.idle_timeout)))
                    }
                    // Refused by the QUIC endpoint: named as the address was written.
                    Ok(Err(Error::Unreachable { why, .. })) => {
                        return Err(Error::Unreachable {
                            address: place,
                            why,
                        })
                    }
                    Ok(r) => r?,
                    Err(_) => return Err(no_answer(within)),
                };
                let (s, r) = conn.open_bi().await?;
                (conn, s, r)
            }
            Target::Inproc(name) => {
                let conn =
                    Conn::Inproc(inproc::connect(name, &ctx.limits).map_err(refused(&place))?);
                let (s, r) = conn.open_bi().await?;
                (conn, s, r)
            }
            Target::Unix(t) => {
                let connecting = unix::connect(t, &ctx.limits, ctx.life.clone());
                let (c, s, r) = match tokio::time::timeout(within, connecting).await {
                    Ok(r) => r.map_err(refused(&place))?,
                    Err(_) => return Err(no_answer(within)),
                };
                (Conn::Unix(c), s, r)
            }
            Target::Pipe(_) => return Err(pipe_unsupported()),
            #[allow(unreachable_patterns)]
            _ => return Err(Error::Unsupported(format!("transport of {address}"))),
        };
        ctx.stats
            .connections_dialled
            .fetch_add(1, Ordering::Relaxed);
        ctx.track(&conn);
        // HELLO: ours first, then the peer's (PROTOCOL.md §3.2).
        let mut out = vec![StreamType::Control.to_byte()];
        let mine = our_hello(&ctx.config, session.as_ref(), flow);
        ControlFrame::Hello(mine.clone()).encode(&mut out);
        if let Err(e) = send.write(Bytes::from(out)).await {
            return Err(refused_here(&conn, &place, e.into_write_error("")));
        }
        let mut ctl = ControlReader::new(recv);
        let left = within.saturating_sub(started.elapsed());
        let first = match tokio::time::timeout(left, ctl.next()).await {
            Ok(first) => first.map_err(|e| refused_here(&conn, &place, e)),
            Err(_) => {
                // The transport answered, the listener did not: not a weida listener, or one
                // too loaded to speak in time. Either way nothing was sent on it.
                conn.close(Code::GoingAway, "no HELLO within connect_timeout");
                return Err(no_answer(within));
            }
        };
        let agreed = match conclude(Side::Dialling, &mine, first) {
            Ok(agreed) => agreed,
            Err(refused) => {
                conn.close(refused.code, &refused.reason);
                return Err(refused.error);
            }
        };
        if let Conn::Unix(u) = &conn {
            u.keep_sockets(agreed.peer_keeps_sockets);
        }
        let link = Arc::new(Link::new(
            ctx.clone(),
            conn.clone(),
            path,
            send,
            &agreed,
            session,
        ));
        tracing::debug!(peer = ?link.peer, agreed = ?agreed.guarantees, "connected");
        // The control stream ends with the connection; over a local socket it is how the loss
        // is learned. Weak: the pool's count of a link's users must not include this task.
        let life = ctx.life.clone();
        let weak = Arc::downgrade(&link);
        tokio::spawn(async move {
            let answers = async {
                loop {
                    match ctl.next().await {
                        Ok(Some(ControlFrame::Answer {
                            request,
                            code,
                            reason,
                        })) => {
                            if let Some(l) = weak.upgrade() {
                                l.answered(request, code, reason);
                            }
                        }
                        Ok(Some(ControlFrame::Close { .. })) | Ok(None) => return Code::NoError,
                        Ok(Some(_)) => {}
                        Err(Error::Protocol(_)) => return Code::ProtocolError,
                        Err(_) => return Code::NoError,
                    }
                }
            };
            tokio::select! {
                _ = conn.closed() => {}
                code = answers => {
                    // The listener's half of the control stream ended: so does the connection,
                    // and the peer ended it.
                    conn.ended_by_peer(code);
                }
                _ = life.dead() => {}
            }
            if let Some(l) = weak.upgrade() {
                l.mark_ended();
                l.release_control().await;
            }
        });
        Ok(link)
    }
}

/// The session a subscriber dialling `address` announces: over AF_UNIX (when it parks
/// reverse connections at all), how many it parks and the token they carry (PROTOCOL.md §3.7).
pub(crate) fn subscriber_session(limits: &Limits, address: &Address) -> Option<Session> {
    match address.target() {
        Target::Unix(_) if limits.max_parked_reverse > 0 => Some(Session {
            // Parked connections are streams: leave one for the rest.
            parked: (limits.max_parked_reverse as u64)
                .min(limits.max_local_streams.saturating_sub(1))
                .max(1),
            token: Bytes::copy_from_slice(&rand::random::<[u8; 16]>()),
        }),
        _ => None,
    }
}

/// Why a `weida+pipe://` address is neither dialled nor bound here.
pub(crate) fn pipe_unsupported() -> Error {
    Error::Unsupported(
        "named pipes (weida+pipe://) exist only on Windows; use weida+unix:// here".into(),
    )
}

/// The error a failed handshake read means: the peer's close reason when it closed.
fn closed_error(conn: &Conn, fallback: Error) -> Error {
    if let Some((code, text)) = conn.peer_close() {
        if code == Code::NegotiationFailed || code == Code::ProtocolError {
            return code.into_error("", &text);
        }
    }
    fallback
}

/// The error of a control stream that failed before the listener's HELLO: an AF_UNIX
/// listener refuses a connection past this process's share as it accepts it, with a STOP and a
/// RESET of LIMIT_EXCEEDED (PROTOCOL §8.6), read here by the HELLO's write or by the wait for
/// the listener's; no other LIMIT_EXCEEDED reaches a control stream. Anything else is
/// [`closed_error`]'s.
fn refused_here(conn: &Conn, place: &str, e: Error) -> Error {
    match (conn, e) {
        (Conn::Unix(_), Error::LimitExceeded { .. }) => Error::limit(
            Limit::Remote,
            format!(
                "{place} refused the connection: its listener holds as many from this process \
                 as its max_local_peer_connections allows"
            ),
        ),
        (_, e) => closed_error(conn, e),
    }
}

/// Where a dial went, as its failure names it: `host:port`, the socket's path, or the
/// in-process name (the path on the listener is not part of reaching it).
fn place_of(address: &Address) -> String {
    match address.target() {
        Target::Quic { host, port } => format!("{host}:{port}"),
        Target::Inproc(name) => format!("in-process name {name:?}"),
        Target::Unix(crate::address::UnixTarget::Path(p)) => {
            format!("local socket {}", p.display())
        }
        Target::Unix(crate::address::UnixTarget::Abstract(n)) => format!("local socket @{n}"),
        _ => address.to_string(),
    }
}

/// An operating-system refusal of a local dial (no socket file, nothing accepting on it, a
/// listener that closed as it connected, nothing bound at the name) as `Unreachable`; any other
/// error (a permission, say) as it was.
fn refused(place: &str) -> impl Fn(Error) -> Error + '_ {
    move |e| match e {
        Error::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::ConnectionReset
            ) =>
        {
            let what = match io.kind() {
                std::io::ErrorKind::NotFound => "no such socket file",
                // The listening socket closed with this connection in its backlog.
                std::io::ErrorKind::ConnectionReset => "the listener closed as it connected",
                _ if place.starts_with("in-process") => "nothing is bound at that name",
                _ => "connection refused (no listener on the socket)",
            };
            Error::Unreachable {
                address: place.to_string(),
                why: Unanswered::Refused(what.to_string()),
            }
        }
        e => e,
    }
}
