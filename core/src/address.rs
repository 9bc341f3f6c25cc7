//! Addresses: the one text form that names a weida listener or endpoint, on every transport.
//!
//! ```text
//! weida://[sha256:<64 hex>@]host:port[/path]
//! weida+unix://<socket path>[//<path without its leading '/'>]
//! weida+inproc://<name>[/path]
//! weida+pipe://<name>[/path]
//! ```
//!
//! An address without a path names a listener (what you bind); with a path it names one
//! endpoint on that listener (what you connect to). docs/PROTOCOL.md gives the grammar; this
//! module is its reference implementation, and [`Address`]'s `Display` is its canonical form.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::{AddressPart, Error};
use crate::security::fingerprint::Fingerprint;

/// Longest socket path: `sun_path` is 108 bytes and the kernel needs one for the terminating
/// NUL (or, for an abstract name, the leading NUL).
const MAX_SOCKET_PATH: usize = 107;
/// RFC 1035 limits.
const MAX_HOST_NAME: usize = 253;
const MAX_LABEL: usize = 63;
const MAX_LOCAL_NAME: usize = 255;
const MAX_PATH: usize = 1024;

const ACCEPTED_SCHEMES: &str = "weida://, weida+unix://, weida+inproc:// or weida+pipe://";
const NO_LOCAL_PIN: &str = "a local address carries no key: the kernel proves the peer";

/// The transport an address names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scheme {
    /// `weida://`: QUIC over UDP, peers proven by their keys.
    Quic,
    /// `weida+unix://`: a Unix domain socket.
    Unix,
    /// `weida+inproc://`: within this process, no socket at all.
    Inproc,
    /// `weida+pipe://`: a Windows named pipe.
    Pipe,
}

impl Scheme {
    fn as_str(self) -> &'static str {
        match self {
            Self::Quic => "weida",
            Self::Unix => "weida+unix",
            Self::Inproc => "weida+inproc",
            Self::Pipe => "weida+pipe",
        }
    }
}

impl fmt::Display for Scheme {
    /// The scheme as an address spells it, without `://`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The host of a `weida://` address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// An IPv4 or IPv6 literal.
    Ip(IpAddr),
    /// A DNS name, lowercased: DNS ignores case, and one host should make one pool key.
    Name(String),
}

impl fmt::Display for Host {
    /// IPv6 goes in brackets, as in the address, so `{host}:{port}` is never ambiguous.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Self::Name(name) => f.write_str(name),
        }
    }
}

/// Where an address leads: everything but the scheme's key pin and the endpoint path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Target {
    /// A QUIC listener.
    Quic {
        /// The host to dial or bind.
        host: Host,
        /// The UDP port; 0 binds any free port.
        port: u16,
    },
    /// A Unix domain socket.
    Unix(UnixTarget),
    /// The in-process name.
    Inproc(String),
    /// The named-pipe name, without the `\\.\pipe\` prefix. Parsed on every platform so an
    /// address means the same everywhere; only Windows has the transport.
    Pipe(String),
}

/// The socket a `weida+unix://` address names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum UnixTarget {
    /// A socket file, absolute or relative to the working directory.
    Path(PathBuf),
    /// A name in the Linux abstract namespace, written `@name`; no file, gone with its socket.
    Abstract(String),
}

/// A parsed weida address: a transport target, an optional key pin, an optional endpoint path.
///
/// Every `Address` came out of [`Address::parse`], so every one is valid, and its `Display` is
/// the canonical text that parses back to an equal `Address`.
///
/// ```
/// use weida::address::{Address, Host, Scheme, Target, UnixTarget};
///
/// let pin = "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
/// let a: Address = format!("WEIDA://{pin}@Example.com:4433/jobs").parse()?;
/// assert_eq!(a.scheme(), Scheme::Quic);
/// assert_eq!(
///     a.target(),
///     &Target::Quic { host: Host::Name("example.com".into()), port: 4433 }
/// );
/// assert_eq!(a.pin().map(|p| p.to_string()), Some(pin.to_string()));
/// assert_eq!(a.path(), Some("/jobs"));
/// assert_eq!(a.to_string(), format!("weida://{pin}@example.com:4433/jobs"));
/// assert_eq!(a.authority_key(), format!("weida://{pin}@example.com:4433"));
///
/// // A Unix socket path ends at the first "//"; what follows is the endpoint path.
/// let u = Address::parse("weida+unix:///tmp/w.sock//jobs")?;
/// assert_eq!(u.target(), &Target::Unix(UnixTarget::Path("/tmp/w.sock".into())));
/// assert_eq!(u.endpoint_path()?, "/jobs");
/// assert!(u.without_path().endpoint_path().is_err());
/// # Ok::<(), weida::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Address {
    target: Target,
    /// Only ever `Some` for a QUIC target: `parse` and `with_pin` keep it so.
    pin: Option<Fingerprint>,
    /// Always valid by [`validate_path`].
    path: Option<String>,
}

impl Address {
    /// Parses an address; the error's [`AddressPart`] says which part is wrong.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let (scheme, rest) = split_scheme(s)?;
        match scheme {
            Scheme::Quic => parse_quic(rest),
            Scheme::Unix => parse_unix(rest),
            Scheme::Inproc => parse_local(rest, Scheme::Inproc),
            Scheme::Pipe => parse_local(rest, Scheme::Pipe),
        }
    }

    /// The transport.
    pub fn scheme(&self) -> Scheme {
        match self.target {
            Target::Quic { .. } => Scheme::Quic,
            Target::Unix(_) => Scheme::Unix,
            Target::Inproc(_) => Scheme::Inproc,
            Target::Pipe(_) => Scheme::Pipe,
        }
    }

    /// Where the address leads.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The fingerprint the peer's key must have, if the address pins one.
    pub fn pin(&self) -> Option<&Fingerprint> {
        self.pin.as_ref()
    }

    /// The endpoint path, or `None` for an address that names a whole listener.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// The endpoint path, for callers that need one (connecting to an endpoint); the error
    /// says which address lacked it.
    pub fn endpoint_path(&self) -> Result<&str, Error> {
        self.path().ok_or_else(|| {
            invalid(
                AddressPart::Path,
                format!(
                    "{:?} has no endpoint path: add the endpoint's path, as in {:?}",
                    self.to_string(),
                    self.with_path_unchecked("/jobs").to_string()
                ),
            )
        })
    }

    /// The same listener with `path` as its endpoint path, which [`validate_path`] must accept.
    pub fn with_path(&self, path: &str) -> Result<Self, Error> {
        validate_path(path)?;
        Ok(self.with_path_unchecked(path))
    }

    /// The same address pinned to `pin`, replacing any pin it had. Only `weida://` addresses
    /// take a pin.
    pub fn with_pin(&self, pin: Fingerprint) -> Result<Self, Error> {
        if self.scheme() != Scheme::Quic {
            return Err(invalid(
                AddressPart::Pin,
                format!("{NO_LOCAL_PIN}; {:?} cannot be pinned", self.to_string()),
            ));
        }
        Ok(Self {
            pin: Some(pin),
            ..self.clone()
        })
    }

    /// The listener this address is on: the address without its endpoint path.
    pub fn without_path(&self) -> Self {
        Self {
            path: None,
            ..self.clone()
        }
    }

    /// Scheme, pin and target without the path, in canonical text: the peer this address names,
    /// whatever endpoint on it. (The runtime keeps one connection per dialled *path*, so its
    /// pool is keyed by the whole address; this key groups those connections by peer. The pin
    /// is part of it because a connection proven to one key must not serve another.)
    pub fn authority_key(&self) -> String {
        self.without_path().to_string()
    }

    fn with_path_unchecked(&self, path: &str) -> Self {
        Self {
            path: Some(path.to_owned()),
            ..self.clone()
        }
    }
}

impl FromStr for Address {
    type Err = Error;

    /// Same as [`Address::parse`].
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::parse(s)
    }
}

impl fmt::Display for Address {
    /// The canonical text: lowercase scheme, pin and host name, and IP literals as the standard
    /// library writes them. Parsing it gives back an equal `Address`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme())?;
        let path = self.path.as_deref().unwrap_or("");
        match &self.target {
            Target::Quic { host, port } => {
                if let Some(pin) = &self.pin {
                    write!(f, "{pin}@")?;
                }
                write!(f, "{host}:{port}{path}")
            }
            Target::Unix(socket) => {
                match socket {
                    UnixTarget::Path(p) => write!(f, "{}", p.display())?,
                    UnixTarget::Abstract(name) => write!(f, "@{name}")?,
                }
                // The socket path may itself contain '/', so the endpoint path is set off by
                // an extra '/': the first "//" ends the socket path.
                if self.path.is_some() {
                    write!(f, "/{path}")?;
                }
                Ok(())
            }
            Target::Inproc(name) | Target::Pipe(name) => write!(f, "{name}{path}"),
        }
    }
}

/// Checks an endpoint path: it starts with `/`, is 1 to 1024 bytes, and holds no ASCII control
/// character, space, `?` or `#`.
///
/// Paths are opaque: matched byte for byte, never normalized, so `/a` and `/a/` are two paths.
pub fn validate_path(path: &str) -> Result<(), Error> {
    let bad = |reason: String| invalid(AddressPart::Path, reason);
    if !path.starts_with('/') {
        return Err(bad(format!("{} does not start with '/'", quote(path))));
    }
    if path.len() > MAX_PATH {
        return Err(bad(format!(
            "{} is {} bytes, longer than the {MAX_PATH} a path may be",
            quote(path),
            path.len()
        )));
    }
    // '?' and '#' are kept out so a query or fragment syntax can be added later without
    // changing what an existing address means; spaces and controls so paths survive logs,
    // shells and copy-paste.
    if let Some(c) = path
        .chars()
        .find(|c| c.is_ascii_control() || matches!(c, ' ' | '?' | '#'))
    {
        return Err(bad(format!(
            "{} contains {c:?}; a path may not hold control characters, spaces, '?' or '#'",
            quote(path)
        )));
    }
    Ok(())
}

fn invalid(part: AddressPart, reason: String) -> Error {
    Error::InvalidAddress { part, reason }
}

/// Quotes offending text for an error, shortened so a huge input does not make a huge error.
fn quote(s: &str) -> String {
    const KEEP: usize = 80;
    match s.char_indices().nth(KEEP) {
        Some((end, _)) => format!("{:?}...", &s[..end]),
        None => format!("{s:?}"),
    }
}

fn split_scheme(s: &str) -> Result<(Scheme, &str), Error> {
    let Some((name, rest)) = s.split_once("://") else {
        return Err(invalid(
            AddressPart::Scheme,
            format!(
                "{} has no scheme: start it with {ACCEPTED_SCHEMES}",
                quote(s)
            ),
        ));
    };
    let scheme = [Scheme::Quic, Scheme::Unix, Scheme::Inproc, Scheme::Pipe]
        .into_iter()
        .find(|scheme| scheme.as_str().eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            invalid(
                AddressPart::Scheme,
                format!(
                    "unknown scheme {}: the accepted schemes are {ACCEPTED_SCHEMES}",
                    quote(&format!("{name}://"))
                ),
            )
        })?;
    Ok((scheme, rest))
}

fn parse_quic(rest: &str) -> Result<Address, Error> {
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], Some(&rest[i..])),
        None => (rest, None),
    };
    let (pin, host_port) = match authority.split_once('@') {
        Some((pin, host_port)) => (Some(pin.parse::<Fingerprint>()?), host_port),
        None => (None, authority),
    };
    let (host, port) = parse_host_port(host_port)?;
    if let Some(path) = path {
        validate_path(path)?;
    }
    Ok(Address {
        target: Target::Quic { host, port },
        pin,
        path: path.map(str::to_owned),
    })
}

fn parse_host_port(text: &str) -> Result<(Host, u16), Error> {
    let bad_host = |reason: String| invalid(AddressPart::Host, reason);
    let (host, port) = if let Some(bracketed) = text.strip_prefix('[') {
        let Some((inside, after)) = bracketed.split_once(']') else {
            return Err(bad_host(format!("{} has '[' without ']'", quote(text))));
        };
        let ip = inside.parse::<Ipv6Addr>().map_err(|_| {
            bad_host(format!(
                "{} is not an IPv6 address; only IPv6 goes in brackets",
                quote(inside)
            ))
        })?;
        let port = match after.strip_prefix(':') {
            Some(port) => port,
            None if after.is_empty() => return Err(missing_port(text)),
            None => {
                return Err(invalid(
                    AddressPart::Port,
                    format!("{} follows ']' where ':port' should", quote(after)),
                ))
            }
        };
        (Host::Ip(IpAddr::V6(ip)), port)
    } else {
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        };
        let host = parse_host(host)?;
        (host, port.ok_or_else(|| missing_port(text))?)
    };
    Ok((host, parse_port(port)?))
}

fn missing_port(host_port: &str) -> Error {
    invalid(
        AddressPart::Port,
        format!(
            "{} has no port: write host:port (port 0 binds any free port)",
            quote(host_port)
        ),
    )
}

fn parse_port(text: &str) -> Result<u16, Error> {
    // u16's own parser would also take a '+' sign.
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(port) = text.parse::<u16>() {
            return Ok(port);
        }
    }
    Err(invalid(
        AddressPart::Port,
        format!("{} is not a port: a decimal number 0..=65535", quote(text)),
    ))
}

/// An unbracketed host: an IPv4 dotted quad or a DNS name.
fn parse_host(text: &str) -> Result<Host, Error> {
    let bad = |reason: String| invalid(AddressPart::Host, reason);
    if text.is_empty() {
        return Err(bad("the host is empty".to_owned()));
    }
    if text.contains(':') {
        return Err(bad(format!(
            "{} contains ':'; an IPv6 address goes in brackets, as in [::1]:4433",
            quote(text)
        )));
    }
    // Digits and dots alone are meant as IPv4, never as a name; "1.2.3" or "256.0.0.1" must
    // not quietly become a DNS lookup.
    if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return text
            .parse::<Ipv4Addr>()
            .map(|ip| Host::Ip(IpAddr::V4(ip)))
            .map_err(|_| bad(format!("{} is not an IPv4 dotted quad", quote(text))));
    }
    if text.len() > MAX_HOST_NAME {
        return Err(bad(format!(
            "{} is {} bytes, longer than the {MAX_HOST_NAME} a host name may be",
            quote(text),
            text.len()
        )));
    }
    for label in text.split('.') {
        let why = if label.is_empty() {
            "has an empty label"
        } else if label.len() > MAX_LABEL {
            "has a label longer than 63 bytes"
        } else if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            "holds a character other than letters, digits, '-' and '.'"
        } else if label.starts_with('-') || label.ends_with('-') {
            "has a label that starts or ends with '-'"
        } else {
            continue;
        };
        return Err(bad(format!("host name {} {why}", quote(text))));
    }
    Ok(Host::Name(text.to_ascii_lowercase()))
}

/// A pin on a local scheme is refused as a pin, not as a bad socket path or name, so the error
/// points at the real mistake.
fn reject_local_pin(target: &str) -> Result<(), Error> {
    let looks_pinned = target
        .get(..7)
        .is_some_and(|p| p.eq_ignore_ascii_case("sha256:"))
        && target.contains('@');
    if looks_pinned {
        let pin = target.split('@').next().unwrap_or_default();
        return Err(invalid(
            AddressPart::Pin,
            format!("{NO_LOCAL_PIN} (remove {})", quote(&format!("{pin}@"))),
        ));
    }
    Ok(())
}

fn parse_unix(rest: &str) -> Result<Address, Error> {
    let (socket, path) = match rest.split_once("//") {
        Some((socket, path)) => (socket, Some(format!("/{path}"))),
        None => (rest, None),
    };
    reject_local_pin(socket)?;
    let bad = |reason: String| invalid(AddressPart::SocketPath, reason);
    let (kind, name) = match socket.strip_prefix('@') {
        Some(name) => ("abstract socket name", name),
        None => ("socket path", socket),
    };
    if name.is_empty() {
        return Err(bad(format!("the {kind} is empty")));
    }
    if name.len() > MAX_SOCKET_PATH {
        return Err(bad(format!(
            "{kind} {} is {} bytes; sun_path holds at most {MAX_SOCKET_PATH}",
            quote(name),
            name.len()
        )));
    }
    if name.contains('\0') {
        return Err(bad(format!("{kind} {} contains NUL", quote(name))));
    }
    // A trailing '/' would merge with the "//" before an endpoint path, and the address would
    // parse back with a different split; a socket is a file, so it has no trailing '/' anyway.
    if name.ends_with('/') {
        return Err(bad(format!("{kind} {} ends in '/'", quote(name))));
    }
    if let Some(path) = &path {
        validate_path(path)?;
    }
    let target = match socket.strip_prefix('@') {
        Some(name) => UnixTarget::Abstract(name.to_owned()),
        None => UnixTarget::Path(PathBuf::from(socket)),
    };
    Ok(Address {
        target: Target::Unix(target),
        pin: None,
        path,
    })
}

/// `weida+inproc://` and `weida+pipe://`: a name, then an optional path.
fn parse_local(rest: &str, scheme: Scheme) -> Result<Address, Error> {
    let (name, path) = match rest.find('/') {
        Some(i) => (&rest[..i], Some(&rest[i..])),
        None => (rest, None),
    };
    reject_local_pin(name)?;
    let bad = |reason: String| invalid(AddressPart::Name, reason);
    if name.is_empty() {
        return Err(bad(format!("the {scheme}:// name is empty")));
    }
    if name.len() > MAX_LOCAL_NAME {
        return Err(bad(format!(
            "{} is {} bytes, longer than the {MAX_LOCAL_NAME} a name may be",
            quote(name),
            name.len()
        )));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(bad(format!(
            "{} holds a character other than letters, digits, '.', '_' and '-'",
            quote(name)
        )));
    }
    if let Some(path) = path {
        validate_path(path)?;
    }
    let target = match scheme {
        Scheme::Pipe => Target::Pipe(name.to_owned()),
        _ => Target::Inproc(name.to_owned()),
    };
    Ok(Address {
        target,
        pin: None,
        path: path.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HEX: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    fn pin() -> Fingerprint {
        format!("sha256:{HEX}").parse().unwrap()
    }

    fn quic(host: Host, port: u16) -> Target {
        Target::Quic { host, port }
    }

    fn name(n: &str) -> Host {
        Host::Name(n.to_owned())
    }

    fn ip(s: &str) -> Host {
        Host::Ip(s.parse().unwrap())
    }

    fn sock(p: &str) -> Target {
        Target::Unix(UnixTarget::Path(PathBuf::from(p)))
    }

    fn part_of(result: Result<Address, Error>) -> Option<AddressPart> {
        match result {
            Err(Error::InvalidAddress { part, .. }) => Some(part),
            _ => None,
        }
    }

    #[test]
    fn good_addresses_parse_into_their_parts_and_display_canonically() {
        let pinned = format!("weida://sha256:{HEX}@example.com:4433/jobs");
        let upper_pin = format!(
            "weida://sha256:{}@example.com:4433/jobs",
            HEX.to_uppercase()
        );
        let long_path = format!("/{}", "p".repeat(MAX_PATH - 1));
        let long_path_addr = format!("weida+inproc://n{long_path}");
        let long_socket = format!("/{}", "s".repeat(MAX_SOCKET_PATH - 1));
        let long_socket_addr = format!("weida+unix://{long_socket}");
        let long_name = "n".repeat(MAX_LOCAL_NAME);
        let long_name_addr = format!("weida+pipe://{long_name}");
        let label = "a".repeat(MAX_LABEL);
        let long_host = [label.as_str(); 4].join(".")[..MAX_HOST_NAME].to_owned();
        let long_host_addr = format!("weida://{long_host}:1");
        let pin_some = Some(pin());
        // (input, canonical display, scheme, target, pin, path)
        type Case<'a> = (
            &'a str,
            &'a str,
            Scheme,
            Target,
            Option<Fingerprint>,
            Option<&'a str>,
        );
        #[rustfmt::skip]
        let cases: Vec<Case<'_>> = vec![
            ("weida://127.0.0.1:4433", "weida://127.0.0.1:4433", Scheme::Quic, quic(ip("127.0.0.1"), 4433), None, None),
            ("weida://0.0.0.0:0", "weida://0.0.0.0:0", Scheme::Quic, quic(ip("0.0.0.0"), 0), None, None),
            ("weida://[::1]:65535/", "weida://[::1]:65535/", Scheme::Quic, quic(ip("::1"), 65535), None, Some("/")),
            ("weida://[0:0:0:0:0:0:0:1]:80/a", "weida://[::1]:80/a", Scheme::Quic, quic(ip("::1"), 80), None, Some("/a")),
            ("weida://[::ffff:10.0.0.1]:9/x", "weida://[::ffff:10.0.0.1]:9/x", Scheme::Quic, quic(ip("::ffff:10.0.0.1"), 9), None, Some("/x")),
            ("weida://localhost:1/a/", "weida://localhost:1/a/", Scheme::Quic, quic(name("localhost"), 1), None, Some("/a/")),
            ("WEIDA://Example.COM:4433/Jobs", "weida://example.com:4433/Jobs", Scheme::Quic, quic(name("example.com"), 4433), None, Some("/Jobs")),
            ("weida://a-b.c1.d:007", "weida://a-b.c1.d:7", Scheme::Quic, quic(name("a-b.c1.d"), 7), None, None),
            ("weida://1e100.net:5", "weida://1e100.net:5", Scheme::Quic, quic(name("1e100.net"), 5), None, None),
            (&pinned, &pinned, Scheme::Quic, quic(name("example.com"), 4433), pin_some, Some("/jobs")),
            (&upper_pin, &pinned, Scheme::Quic, quic(name("example.com"), 4433), pin_some, Some("/jobs")),
            (&long_host_addr, &long_host_addr, Scheme::Quic, quic(name(&long_host), 1), None, None),
            ("weida://h:1/a@b:c/%20~é/ü//", "weida://h:1/a@b:c/%20~é/ü//", Scheme::Quic, quic(name("h"), 1), None, Some("/a@b:c/%20~é/ü//")),
            ("weida+unix:///tmp/w.sock//jobs", "weida+unix:///tmp/w.sock//jobs", Scheme::Unix, sock("/tmp/w.sock"), None, Some("/jobs")),
            ("weida+unix:///tmp/w.sock", "weida+unix:///tmp/w.sock", Scheme::Unix, sock("/tmp/w.sock"), None, None),
            ("weida+unix:///tmp/w.sock//", "weida+unix:///tmp/w.sock//", Scheme::Unix, sock("/tmp/w.sock"), None, Some("/")),
            ("weida+unix:///tmp/w.sock///a", "weida+unix:///tmp/w.sock///a", Scheme::Unix, sock("/tmp/w.sock"), None, Some("//a")),
            ("weida+unix://@weida-test//a/b", "weida+unix://@weida-test//a/b", Scheme::Unix, Target::Unix(UnixTarget::Abstract("weida-test".into())), None, Some("/a/b")),
            ("weida+unix://@a/b", "weida+unix://@a/b", Scheme::Unix, Target::Unix(UnixTarget::Abstract("a/b".into())), None, None),
            ("weida+unix://./run/w.sock//x", "weida+unix://./run/w.sock//x", Scheme::Unix, sock("./run/w.sock"), None, Some("/x")),
            ("weida+unix:///run/user@1000/s y", "weida+unix:///run/user@1000/s y", Scheme::Unix, sock("/run/user@1000/s y"), None, None),
            ("Weida+Unix://w.sock", "weida+unix://w.sock", Scheme::Unix, sock("w.sock"), None, None),
            (&long_socket_addr, &long_socket_addr, Scheme::Unix, sock(&long_socket), None, None),
            ("weida+inproc://bus", "weida+inproc://bus", Scheme::Inproc, Target::Inproc("bus".into()), None, None),
            ("weida+inproc://A.b_c-9/x/y", "weida+inproc://A.b_c-9/x/y", Scheme::Inproc, Target::Inproc("A.b_c-9".into()), None, Some("/x/y")),
            (&long_path_addr, &long_path_addr, Scheme::Inproc, Target::Inproc("n".into()), None, Some(&long_path)),
            ("weida+pipe://weida-1/jobs", "weida+pipe://weida-1/jobs", Scheme::Pipe, Target::Pipe("weida-1".into()), None, Some("/jobs")),
            ("WEIDA+PIPE://p", "weida+pipe://p", Scheme::Pipe, Target::Pipe("p".into()), None, None),
            (&long_name_addr, &long_name_addr, Scheme::Pipe, Target::Pipe(long_name.clone()), None, None),
        ];
        for (input, display, scheme, target, pin, path) in cases {
            let a = Address::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(a.scheme(), scheme, "{input:?}");
            assert_eq!(a.target(), &target, "{input:?}");
            assert_eq!(a.pin(), pin.as_ref(), "{input:?}");
            assert_eq!(a.path(), path, "{input:?}");
            assert_eq!(a.to_string(), display, "{input:?}");
            assert_eq!(Address::parse(display).unwrap(), a, "{input:?}");
            assert_eq!(input.parse::<Address>().unwrap(), a, "{input:?}");
        }
    }

    #[test]
    fn bad_addresses_name_the_part_that_is_wrong() {
        use AddressPart::*;
        let pin = format!("sha256:{HEX}@");
        let long = |n: usize| "a".repeat(n);
        #[rustfmt::skip]
        let cases: Vec<(String, AddressPart)> = vec![
            ("".into(), Scheme),
            ("example.com:4433".into(), Scheme),
            ("tcp://127.0.0.1:80".into(), Scheme),
            ("weida:/h:1".into(), Scheme),
            ("weida+tcp://h:1".into(), Scheme),
            (" weida://h:1".into(), Scheme),
            ("weida://user@h:1".into(), Pin),
            ("weida://sha256:00@h:1".into(), Pin),
            (format!("weida://sha256:{}@h:1", "g".repeat(64)), Pin),
            (format!("weida://SHA256:{HEX}@h:1"), Pin),
            (format!("weida+unix://{pin}/tmp/w.sock"), Pin),
            (format!("weida+unix://{pin}@abstract//x"), Pin),
            (format!("weida+inproc://{pin}bus"), Pin),
            (format!("weida+pipe://{pin}p/x"), Pin),
            ("weida://".into(), Host),
            ("weida://:80".into(), Host),
            (format!("weida://{pin}:80"), Host),
            ("weida://::1:80".into(), Host),
            ("weida://[::1:80".into(), Host),
            ("weida://[1.2.3.4]:80".into(), Host),
            ("weida://[fe80::1%eth0]:80".into(), Host),
            ("weida://256.0.0.1:80".into(), Host),
            ("weida://1.2.3:80".into(), Host),
            ("weida://01.2.3.4:80".into(), Host),
            ("weida://a..b:80".into(), Host),
            ("weida://example.com.:80".into(), Host),
            ("weida://-a.b:80".into(), Host),
            ("weida://a-.b:80".into(), Host),
            ("weida://a_b:80".into(), Host),
            ("weida://h:1:2".into(), Host),
            (format!("weida://{}:80", long(64)), Host),
            (format!("weida://{}.{}.{}.{}:80", long(63), long(63), long(63), long(62)), Host),
            ("weida://h".into(), Port),
            ("weida://h/x".into(), Port),
            ("weida://h:".into(), Port),
            ("weida://h:65536".into(), Port),
            ("weida://h:-1".into(), Port),
            ("weida://h:+1".into(), Port),
            ("weida://h:8o".into(), Port),
            ("weida://h:80 ".into(), Port),
            ("weida://[::1]".into(), Port),
            ("weida://[::1]80".into(), Port),
            ("weida://[::1]:".into(), Port),
            ("weida+unix://".into(), SocketPath),
            ("weida+unix:////x".into(), SocketPath),
            ("weida+unix://@".into(), SocketPath),
            ("weida+unix://@//x".into(), SocketPath),
            ("weida+unix:///tmp/a\0b".into(), SocketPath),
            ("weida+unix://@a\0b".into(), SocketPath),
            ("weida+unix:///tmp/dir/".into(), SocketPath),
            ("weida+unix://@a/".into(), SocketPath),
            (format!("weida+unix:///{}", long(MAX_SOCKET_PATH)), SocketPath),
            (format!("weida+unix://@{}", long(MAX_SOCKET_PATH + 1)), SocketPath),
            ("weida+inproc://".into(), Name),
            ("weida+inproc:///x".into(), Name),
            ("weida+inproc://a b".into(), Name),
            ("weida+inproc://a:b".into(), Name),
            ("weida+inproc://user@bus".into(), Name),
            ("weida+inproc://é".into(), Name),
            (format!("weida+inproc://{}", long(MAX_LOCAL_NAME + 1)), Name),
            ("weida+pipe://".into(), Name),
            ("weida+pipe://a\\b".into(), Name),
            ("weida://h:1/a b".into(), Path),
            ("weida://h:1/a?b".into(), Path),
            ("weida://h:1/a#b".into(), Path),
            ("weida://h:1/a\tb".into(), Path),
            ("weida://h:1/a\x7fb".into(), Path),
            (format!("weida://h:1/{}", long(MAX_PATH)), Path),
            ("weida+unix:///tmp/w.sock//a?b".into(), Path),
            ("weida+unix:///tmp/w.sock//a\nb".into(), Path),
            ("weida+inproc://bus/ x".into(), Path),
            ("weida+pipe://p/#".into(), Path),
        ];
        for (input, part) in cases {
            let result = Address::parse(&input);
            assert_eq!(part_of(result), Some(part), "{input:?}");
        }
    }

    #[test]
    fn errors_quote_the_offending_text() {
        let reason = |s: &str| match Address::parse(s) {
            Err(Error::InvalidAddress { reason, .. }) => reason,
            other => panic!("{s:?} gave {other:?}"),
        };
        assert!(reason("tcp://h:1").contains("\"tcp://\""));
        assert!(reason("tcp://h:1").contains("weida+unix://"));
        assert!(reason("weida://h:99999").contains("\"99999\""));
        assert!(reason("weida://a_b:1").contains("\"a_b\""));
        assert!(reason("weida+inproc://a b").contains("\"a b\""));
        assert!(reason("weida://h:1/a?b").contains("\"/a?b\""));
        assert!(reason(&format!("weida+unix:///{}", "a".repeat(200))).contains("107"));
        let local_pin = reason(&format!("weida+unix://sha256:{HEX}@/s"));
        assert!(local_pin.starts_with(NO_LOCAL_PIN), "{local_pin}");
        assert!(local_pin.contains(HEX), "{local_pin}");
        // A huge input does not make a huge error.
        assert!(reason(&format!("weida://h:1/{}", "x".repeat(100_000))).len() < 300);
    }

    #[test]
    fn validate_path_accepts_opaque_paths_and_refuses_the_reserved_characters() {
        for good in ["/", "/a", "/a/", "//", "/a/../b", "/ü", "/%3F", "/a:b@c"] {
            assert!(validate_path(good).is_ok(), "{good:?}");
        }
        for bad in ["", "a", "a/b", " /a", "/a b", "/a?", "/#", "/\0", "/\u{1b}"] {
            assert!(
                matches!(
                    validate_path(bad),
                    Err(Error::InvalidAddress {
                        part: AddressPart::Path,
                        ..
                    })
                ),
                "{bad:?}"
            );
        }
        assert!(validate_path(&format!("/{}", "é".repeat(511))).is_ok());
        assert!(validate_path(&format!("/{}", "é".repeat(512))).is_err());
    }

    #[test]
    fn path_helpers_replace_remove_and_require_the_path() {
        let a = Address::parse("weida://h:1").unwrap();
        assert_eq!(a.path(), None);
        let err = a.endpoint_path().unwrap_err();
        match &err {
            Error::InvalidAddress { part, reason } => {
                assert_eq!(*part, AddressPart::Path);
                assert!(reason.contains("has no endpoint path"), "{reason}");
                assert!(reason.contains("\"weida://h:1\""), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        let with = a.with_path("/jobs").unwrap();
        assert_eq!(with.endpoint_path().unwrap(), "/jobs");
        assert_eq!(with.to_string(), "weida://h:1/jobs");
        assert_eq!(with.with_path("/other").unwrap().path(), Some("/other"));
        assert_eq!(with.without_path(), a);
        assert!(matches!(
            a.with_path("jobs"),
            Err(Error::InvalidAddress {
                part: AddressPart::Path,
                ..
            })
        ));

        let u = Address::parse("weida+unix://@bus").unwrap();
        let u_jobs = u.with_path("/jobs").unwrap();
        assert_eq!(u_jobs.to_string(), "weida+unix://@bus//jobs");
        assert_eq!(Address::parse(&u_jobs.to_string()).unwrap(), u_jobs);
        let i = Address::parse("weida+inproc://bus").unwrap();
        assert_eq!(i.with_path("/").unwrap().to_string(), "weida+inproc://bus/");
    }

    #[test]
    fn pins_only_go_on_quic_addresses() {
        let a = Address::parse("weida://h:1/x").unwrap();
        let pinned = a.with_pin(pin()).unwrap();
        assert_eq!(pinned.pin(), Some(&pin()));
        assert_eq!(pinned.to_string(), format!("weida://sha256:{HEX}@h:1/x"));
        let other = Fingerprint::from_bytes([7; 32]);
        assert_eq!(pinned.with_pin(other).unwrap().pin(), Some(&other));
        for local in ["weida+unix:///s", "weida+inproc://n", "weida+pipe://n"] {
            let a = Address::parse(local).unwrap();
            assert_eq!(a.pin(), None);
            assert!(
                matches!(
                    a.with_pin(pin()),
                    Err(Error::InvalidAddress {
                        part: AddressPart::Pin,
                        ..
                    })
                ),
                "{local}"
            );
        }
    }

    #[test]
    fn authority_key_is_everything_but_the_path() {
        let key = |s: &str| Address::parse(s).unwrap().authority_key();
        assert_eq!(key("weida://h:1/a"), "weida://h:1");
        assert_eq!(key("weida://h:1/a"), key("WEIDA://H:1/b"));
        assert_ne!(key("weida://h:1"), key("weida://h:2"));
        assert_ne!(
            key("weida://h:1"),
            key(&format!("weida://sha256:{HEX}@h:1"))
        );
        assert_eq!(
            key(&format!("weida://sha256:{HEX}@[::1]:1/x")),
            format!("weida://sha256:{HEX}@[::1]:1")
        );
        assert_eq!(
            key("weida+unix:///tmp/w.sock//a"),
            "weida+unix:///tmp/w.sock"
        );
        assert_eq!(key("weida+inproc://bus/a"), "weida+inproc://bus");
        assert_ne!(key("weida+inproc://bus"), key("weida+pipe://bus"));
    }

    #[test]
    fn schemes_and_hosts_display_as_addresses_spell_them() {
        let schemes = [Scheme::Quic, Scheme::Unix, Scheme::Inproc, Scheme::Pipe];
        let names: Vec<String> = schemes.iter().map(Scheme::to_string).collect();
        assert_eq!(names, ["weida", "weida+unix", "weida+inproc", "weida+pipe"]);
        assert_eq!(ip("::1").to_string(), "[::1]");
        assert_eq!(ip("10.0.0.1").to_string(), "10.0.0.1");
        assert_eq!(name("example.com").to_string(), "example.com");
    }

    fn dns_name() -> impl Strategy<Value = String> {
        // The first label starts with a letter so the name is never all digits (that is IPv4).
        let first = "[a-z]([a-z0-9-]{0,20}[a-z0-9])?";
        let label = "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?";
        (first, prop::collection::vec(label, 0..4)).prop_map(|(first, rest)| {
            std::iter::once(first)
                .chain(rest)
                .collect::<Vec<_>>()
                .join(".")
        })
    }

    fn host() -> impl Strategy<Value = Host> {
        prop_oneof![
            any::<IpAddr>().prop_map(Host::Ip),
            dns_name().prop_map(Host::Name),
        ]
    }

    fn path() -> impl Strategy<Value = Option<String>> {
        prop::option::of("/[^\\x00-\\x20\\x7f?#]{0,40}")
    }

    fn local_name() -> impl Strategy<Value = String> {
        "[A-Za-z0-9._-]{1,40}"
    }

    fn unix_target() -> impl Strategy<Value = UnixTarget> {
        let segments = "(/[^\\x00/]{1,12}){1,5}";
        prop_oneof![
            segments
                .prop_filter("fits sun_path", |p: &String| p.len() <= MAX_SOCKET_PATH)
                .prop_map(|p| UnixTarget::Path(PathBuf::from(p))),
            "\\./[a-z0-9._-]{1,12}(/[a-z0-9._-]{1,12}){0,2}"
                .prop_map(|p| UnixTarget::Path(PathBuf::from(p))),
            "[^\\x00/]{1,20}(/[^\\x00/]{1,10}){0,2}"
                .prop_filter("fits", |p: &String| p.len() <= MAX_SOCKET_PATH)
                .prop_map(UnixTarget::Abstract),
        ]
    }

    fn address() -> impl Strategy<Value = Address> {
        let quic = (
            host(),
            any::<u16>(),
            prop::option::of(any::<[u8; 32]>()),
            path(),
        )
            .prop_map(|(host, port, pin, path)| Address {
                target: Target::Quic { host, port },
                pin: pin.map(Fingerprint::from_bytes),
                path,
            });
        let local = (
            prop_oneof![
                unix_target().prop_map(Target::Unix),
                local_name().prop_map(Target::Inproc),
                local_name().prop_map(Target::Pipe),
            ],
            path(),
        )
            .prop_map(|(target, path)| Address {
                target,
                pin: None,
                path,
            });
        prop_oneof![quic, local]
    }

    fn scheme_prefixed() -> impl Strategy<Value = String> {
        let prefix = prop::sample::select(vec![
            "weida://",
            "weida+unix://",
            "weida+unix://@",
            "weida+inproc://",
            "weida+pipe://",
            "weida://sha256:",
            "weida://[",
        ]);
        (prefix, "[\\PC\\x00-\\x1f:/@\\[\\]%?#. -]{0,60}").prop_map(|(p, s)| format!("{p}{s}"))
    }

    proptest! {
        #[test]
        fn valid_addresses_survive_display_and_parse(a in address()) {
            let text = a.to_string();
            let back = Address::parse(&text);
            prop_assert_eq!(back.as_ref().ok(), Some(&a), "{:?} -> {:?}", text, back);
            prop_assert_eq!(a.without_path().to_string(), a.authority_key());
        }

        #[test]
        fn arbitrary_strings_never_panic_and_what_parses_is_canonical(
            s in prop_oneof![any::<String>(), scheme_prefixed()]
        ) {
            if let Ok(a) = Address::parse(&s) {
                let text = a.to_string();
                prop_assert_eq!(Address::parse(&text).ok(), Some(a.clone()));
                prop_assert_eq!(Address::parse(&text).unwrap().to_string(), text);
            } else {
                let is_invalid_address = matches!(Address::parse(&s), Err(Error::InvalidAddress { .. }));
                prop_assert!(is_invalid_address);
            }
        }
    }
}
