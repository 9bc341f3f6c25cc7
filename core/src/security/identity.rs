//! `Identity`: the key pair a weida endpoint presents, with its certificate chain.
//!
//! weida names a peer by the SHA-256 of its public key (a [`Fingerprint`]), so an identity is
//! first of all a key. The certificate around it is a carrier: a fresh identity gets a
//! self-signed certificate, and an operator who wants CA validation can load a CA-signed leaf
//! with [`Identity::from_pem`]. Re-certifying the same key keeps the fingerprint.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::Error;
use crate::security::fingerprint::Fingerprint;

/// The file, inside an identity directory, that holds the private key (PEM, mode 0600).
const KEY_FILE: &str = "key.pem";
/// The file, inside an identity directory, that holds the certificate chain, leaf first (PEM).
const CERT_FILE: &str = "cert.pem";
/// The DNS name a self-signed weida certificate carries.
const SELF_SIGNED_NAME: &str = "weida";

/// A key pair and the certificate chain (leaf first) that presents it.
///
/// Cloning is cheap (the key material is shared behind an `Arc`), and `Debug` prints the
/// fingerprint, never the key.
///
/// ```
/// use weida::Identity;
///
/// // A throwaway identity: a fresh P-256 key in a self-signed certificate.
/// let id = Identity::ephemeral();
/// println!("this endpoint is {}", id.fingerprint());
///
/// // A persistent one: created on first use, the same key on every later call.
/// let dir = tempfile::tempdir()?;
/// let first = Identity::load_or_create(dir.path().join("identity"))?;
/// let again = Identity::load_or_create(dir.path().join("identity"))?;
/// assert_eq!(first.fingerprint(), again.fingerprint());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Identity(Arc<Inner>);

struct Inner {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    fingerprint: Fingerprint,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("fingerprint", &self.0.fingerprint)
            .field("chain_len", &self.0.chain.len())
            .finish_non_exhaustive()
    }
}

impl Identity {
    /// A fresh ECDSA P-256 key in a self-signed certificate for the name `weida`.
    ///
    /// Nothing is written anywhere; the key lives as long as the last clone of the identity.
    pub fn ephemeral() -> Self {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .expect("ring can always generate a P-256 key");
        Self::self_signed(&key).expect("a fresh P-256 key always certifies itself")
    }

    /// Loads the identity kept in `dir`, creating it (directory, key and self-signed
    /// certificate) on first use.
    ///
    /// The directory is created with mode 0700, `key.pem` with mode 0600 and `cert.pem`
    /// beside it. An existing directory or key file that group or others can access is refused
    /// with [`Error::InvalidConfig`], as is a `cert.pem` without its `key.pem`. A `key.pem`
    /// without its `cert.pem` (a creation that was interrupted) gets a new self-signed
    /// certificate for the same key, so the fingerprint is kept. Two processes creating the
    /// same directory at once end up with the same key.
    pub fn load_or_create(dir: impl AsRef<Path>) -> Result<Self, Error> {
        let dir = dir.as_ref();
        ensure_private_dir(dir)?;
        let key_path = dir.join(KEY_FILE);
        let cert_path = dir.join(CERT_FILE);
        match (exists(&key_path)?, exists(&cert_path)?) {
            (true, true) => Self::load(dir),
            (false, true) => Err(Error::InvalidConfig(format!(
                "{} exists without {}; restore the key or remove the certificate",
                cert_path.display(),
                key_path.display()
            ))),
            (true, false) => recertify(dir),
            (false, false) => {
                let fresh = Self::ephemeral();
                let key_tmp = write_temp(dir, KEY_FILE, fresh.key_pem()?.as_bytes(), 0o600)?;
                let cert_tmp = match write_temp(dir, CERT_FILE, fresh.chain_pem().as_bytes(), 0o644)
                {
                    Ok(tmp) => tmp,
                    Err(e) => {
                        let _ = fs::remove_file(&key_tmp);
                        return Err(e);
                    }
                };
                // The key is the identity: it is put in place without replacing one that
                // appeared meanwhile, and the certificate follows it.
                match link_no_clobber(&key_tmp, &key_path) {
                    Ok(()) => {
                        fs::rename(&cert_tmp, &cert_path)?;
                        Ok(fresh)
                    }
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        // Another process created the identity meanwhile: use its key.
                        let _ = fs::remove_file(&key_tmp);
                        let _ = fs::remove_file(&cert_tmp);
                        if exists(&cert_path)? {
                            Self::load(dir)
                        } else {
                            recertify(dir)
                        }
                    }
                    Err(e) => {
                        let _ = fs::remove_file(&key_tmp);
                        let _ = fs::remove_file(&cert_tmp);
                        Err(e.into())
                    }
                }
            }
        }
    }

    /// Loads the identity kept in `dir` (`key.pem` and `cert.pem`).
    ///
    /// Refuses with [`Error::InvalidConfig`] a directory or key file that group or others can
    /// access, a missing file, malformed PEM, or a key that does not match the leaf
    /// certificate. A missing directory is [`Error::Io`].
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, Error> {
        let dir = dir.as_ref();
        check_private(dir, "identity directory")?;
        let key_path = dir.join(KEY_FILE);
        let cert_path = dir.join(CERT_FILE);
        for path in [&key_path, &cert_path] {
            if !exists(path)? {
                return Err(Error::InvalidConfig(format!(
                    "{} is missing from the identity directory",
                    path.display()
                )));
            }
        }
        check_private(&key_path, "private key file")?;
        let key_pem = fs::read_to_string(&key_path)?;
        let cert_pem = fs::read_to_string(&cert_path)?;
        Self::from_pem(&cert_pem, &key_pem).map_err(|e| match e {
            Error::InvalidConfig(why) => Error::InvalidConfig(format!("{}: {why}", dir.display())),
            other => other,
        })
    }

    /// Writes this identity into `dir` as `key.pem` (mode 0600) and `cert.pem`, replacing
    /// what is there.
    ///
    /// The directory is created with mode 0700 if missing; an existing one that group or
    /// others can access is refused with [`Error::InvalidConfig`]. Each file is replaced
    /// atomically (written beside it, then renamed).
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<(), Error> {
        let dir = dir.as_ref();
        ensure_private_dir(dir)?;
        let key_tmp = write_temp(dir, KEY_FILE, self.key_pem()?.as_bytes(), 0o600)?;
        let cert_tmp = match write_temp(dir, CERT_FILE, self.chain_pem().as_bytes(), 0o644) {
            Ok(tmp) => tmp,
            Err(e) => {
                let _ = fs::remove_file(&key_tmp);
                return Err(e);
            }
        };
        fs::rename(&key_tmp, dir.join(KEY_FILE))?;
        fs::rename(&cert_tmp, dir.join(CERT_FILE))?;
        Ok(())
    }

    /// An identity from a PEM certificate chain (leaf first, e.g. a CA-signed leaf followed
    /// by its intermediates) and the leaf's PEM private key (PKCS#8, SEC1 or PKCS#1).
    ///
    /// Refuses with [`Error::InvalidConfig`] malformed PEM, an empty chain, an unparsable
    /// leaf, a key type rustls cannot sign with, or a key that is not the leaf's.
    pub fn from_pem(cert_chain_pem: &str, key_pem: &str) -> Result<Self, Error> {
        let chain = CertificateDer::pem_slice_iter(cert_chain_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::InvalidConfig(format!("malformed certificate PEM: {e}")))?;
        if chain.is_empty() {
            return Err(Error::InvalidConfig(
                "the certificate PEM holds no CERTIFICATE section".to_string(),
            ));
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| {
            Error::InvalidConfig(format!("malformed or missing private key PEM: {e}"))
        })?;
        Self::from_der(chain, key)
    }

    /// The fingerprint of this identity's public key: what a peer pins.
    pub fn fingerprint(&self) -> Fingerprint {
        self.0.fingerprint
    }

    /// The certificate chain, leaf first, as rustls takes it.
    pub(crate) fn cert_chain(&self) -> Vec<CertificateDer<'static>> {
        self.0.chain.clone()
    }

    /// The private key, as rustls takes it.
    pub(crate) fn private_key(&self) -> PrivateKeyDer<'static> {
        self.0.key.clone_key()
    }

    /// A secret of this identity for `purpose`, the same in every process that holds the
    /// key and unguessable to anyone else: SHA-256 over the purpose and the private key.
    /// What a restarted server must share with its previous process (its stateless reset key)
    /// comes from here, so nothing more has to be stored.
    pub(crate) fn derived_secret(&self, purpose: &str) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"weida derived secret\0");
        h.update(purpose.as_bytes());
        h.update([0]);
        h.update(self.0.key.secret_der());
        h.finalize().into()
    }

    /// Builds an identity from DER, checking that rustls can sign with the key and that the
    /// key is the leaf's.
    fn from_der(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Self, Error> {
        let leaf = chain.first().ok_or_else(|| {
            Error::InvalidConfig("an identity needs at least one certificate".to_string())
        })?;
        let fingerprint = fingerprint_of_certificate(leaf).map_err(|e| {
            Error::InvalidConfig(format!("the leaf certificate cannot be parsed: {e}"))
        })?;
        let signer = rustls::crypto::ring::default_provider()
            .key_provider
            .load_private_key(key.clone_key())
            .map_err(|e| {
                Error::InvalidConfig(format!("the private key is malformed or unsupported: {e}"))
            })?;
        if let Some(spki) = signer.public_key() {
            let of_key = Fingerprint::of_public_key(&spki);
            if of_key != fingerprint {
                return Err(Error::InvalidConfig(format!(
                    "the private key ({of_key}) does not match the leaf certificate ({fingerprint})"
                )));
            }
        }
        Ok(Self(Arc::new(Inner {
            chain,
            key,
            fingerprint,
        })))
    }

    /// A self-signed certificate for `key`, named `weida`.
    fn self_signed(key: &rcgen::KeyPair) -> Result<Self, Error> {
        let bad = |e: rcgen::Error| Error::InvalidConfig(format!("cannot certify the key: {e}"));
        let mut params =
            rcgen::CertificateParams::new(vec![SELF_SIGNED_NAME.to_string()]).map_err(bad)?;
        let mut name = rcgen::DistinguishedName::new();
        name.push(rcgen::DnType::CommonName, SELF_SIGNED_NAME);
        params.distinguished_name = name;
        let cert = params.self_signed(key).map_err(bad)?;
        let key_der = PrivatePkcs8KeyDer::from(key.serialize_der());
        Self::from_der(vec![cert.der().clone()], key_der.into())
    }

    fn key_pem(&self) -> Result<String, Error> {
        let (label, der) = match &self.0.key {
            PrivateKeyDer::Pkcs8(k) => ("PRIVATE KEY", k.secret_pkcs8_der()),
            PrivateKeyDer::Sec1(k) => ("EC PRIVATE KEY", k.secret_sec1_der()),
            PrivateKeyDer::Pkcs1(k) => ("RSA PRIVATE KEY", k.secret_pkcs1_der()),
            _ => {
                return Err(Error::InvalidConfig(
                    "this kind of private key cannot be saved as PEM".to_string(),
                ))
            }
        };
        Ok(pem_encode(label, der))
    }

    fn chain_pem(&self) -> String {
        self.0
            .chain
            .iter()
            .map(|c| pem_encode("CERTIFICATE", c))
            .collect()
    }
}

/// The fingerprint of the public key in a DER X.509 certificate (the SHA-256 of its
/// `SubjectPublicKeyInfo`).
///
/// [`Error::Protocol`] if `der` is not exactly one parsable certificate, since the usual
/// source of `der` is a peer.
pub fn fingerprint_of_certificate(der: &[u8]) -> Result<Fingerprint, Error> {
    match x509_parser::parse_x509_certificate(der) {
        Ok(([], cert)) => Ok(Fingerprint::of_public_key(cert.public_key().raw)),
        Ok((rest, _)) => Err(Error::Protocol(format!(
            "certificate followed by {} stray bytes",
            rest.len()
        ))),
        Err(e) => Err(Error::Protocol(format!("unparsable certificate: {e}"))),
    }
}

/// A `key.pem` without `cert.pem`: certify the key again (self-signed), keeping its
/// fingerprint, and write the certificate.
fn recertify(dir: &Path) -> Result<Identity, Error> {
    let key_path = dir.join(KEY_FILE);
    check_private(&key_path, "private key file")?;
    let key_pem = fs::read_to_string(&key_path)?;
    let key = rcgen::KeyPair::from_pem(&key_pem).map_err(|e| {
        Error::InvalidConfig(format!(
            "{} has no certificate and cannot be re-certified: {e}",
            key_path.display()
        ))
    })?;
    let id = Identity::self_signed(&key)?;
    let cert_tmp = write_temp(dir, CERT_FILE, id.chain_pem().as_bytes(), 0o644)?;
    fs::rename(&cert_tmp, dir.join(CERT_FILE))?;
    Ok(id)
}

fn exists(path: &Path) -> Result<bool, Error> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Creates `dir` (and missing parents) with mode 0700, or checks an existing one is private.
fn ensure_private_dir(dir: &Path) -> Result<(), Error> {
    if !exists(dir)? {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
    }
    check_private(dir, "identity directory")
}

/// Refuses (InvalidConfig) a path that group or others can access in any way, and a
/// directory that is not one.
fn check_private(path: &Path, what: &str) -> Result<(), Error> {
    let meta = fs::metadata(path)?;
    let want_dir = what.ends_with("directory");
    if meta.is_dir() != want_dir {
        return Err(Error::InvalidConfig(format!(
            "{what} {} is not a {}",
            path.display(),
            if want_dir { "directory" } else { "file" }
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(Error::InvalidConfig(format!(
                "{what} {} is accessible by group or others (mode {mode:03o}); \
                 restrict it with `chmod {} {}`",
                path.display(),
                if want_dir { "700" } else { "600" },
                path.display()
            )));
        }
    }
    Ok(())
}

/// Writes `contents` to a fresh temporary file beside `dir/name`, with `mode`, synced.
fn write_temp(dir: &Path, name: &str, contents: &[u8], mode: u32) -> Result<PathBuf, Error> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let result = options.open(&tmp).and_then(|mut file| {
        file.write_all(contents)?;
        file.sync_all()
    });
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e.into())
        }
    }
}

/// Moves `tmp` to `dest` unless `dest` exists (then `AlreadyExists`, and `tmp` is left for the
/// caller to remove). A hard link makes the check and the move one step; where the file system
/// has no hard links, an existence check followed by a rename stands in.
fn link_no_clobber(tmp: &Path, dest: &Path) -> io::Result<()> {
    match fs::hard_link(tmp, dest) {
        Ok(()) => {
            let _ = fs::remove_file(tmp);
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        Err(_) => {
            if fs::symlink_metadata(dest).is_ok() {
                return Err(io::Error::from(io::ErrorKind::AlreadyExists));
            }
            fs::rename(tmp, dest)
        }
    }
}

/// PEM armour: base64 in 64-character lines between BEGIN/END `label`.
fn pem_encode(label: &str, der: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::with_capacity(der.len().div_ceil(3) * 4);
    for chunk in der.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                b64.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                b64.push('=');
            }
        }
    }
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    use std::os::unix::fs::PermissionsExt;

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn load_or_create_twice_yields_the_same_fingerprint() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("nested").join("identity");
        let first = Identity::load_or_create(&dir).unwrap();
        let second = Identity::load_or_create(&dir).unwrap();
        assert_eq!(first.fingerprint(), second.fingerprint());
        assert_eq!(
            Identity::load(&dir).unwrap().fingerprint(),
            first.fingerprint()
        );
        // Nothing but the two files is left behind.
        let mut names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["cert.pem", "key.pem"]);
    }

    #[cfg(unix)]
    #[test]
    fn created_directory_is_0700_and_key_file_is_0600() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("identity");
        Identity::load_or_create(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("key.pem")), 0o600);

        let saved = tmp.path().join("saved");
        Identity::ephemeral().save(&saved).unwrap();
        assert_eq!(mode(&saved), 0o700);
        assert_eq!(mode(&saved.join("key.pem")), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn group_readable_key_file_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("identity");
        Identity::load_or_create(&dir).unwrap();
        let key = dir.join("key.pem");
        fs::set_permissions(&key, fs::Permissions::from_mode(0o640)).unwrap();
        for result in [Identity::load_or_create(&dir), Identity::load(&dir)] {
            match result {
                Err(Error::InvalidConfig(why)) => assert!(why.contains("key.pem"), "{why}"),
                other => panic!("expected InvalidConfig, got {other:?}"),
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn group_readable_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("identity");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o750)).unwrap();
        assert!(matches!(
            Identity::load_or_create(&dir),
            Err(Error::InvalidConfig(_))
        ));
        assert!(matches!(
            Identity::ephemeral().save(&dir),
            Err(Error::InvalidConfig(_))
        ));
        // Nothing was written into it.
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
    }

    #[test]
    fn certificate_without_key_is_refused_and_key_without_certificate_is_recertified() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("identity");
        let id = Identity::load_or_create(&dir).unwrap();

        fs::remove_file(dir.join("cert.pem")).unwrap();
        assert!(matches!(Identity::load(&dir), Err(Error::InvalidConfig(_))));
        let again = Identity::load_or_create(&dir).unwrap();
        assert_eq!(again.fingerprint(), id.fingerprint());
        assert!(dir.join("cert.pem").exists());

        fs::remove_file(dir.join("key.pem")).unwrap();
        assert!(matches!(
            Identity::load_or_create(&dir),
            Err(Error::InvalidConfig(_))
        ));
    }

    #[test]
    fn save_then_load_keeps_key_and_chain() {
        let tmp = tempfile::tempdir().unwrap();
        let id = Identity::ephemeral();
        id.save(tmp.path().join("id")).unwrap();
        let loaded = Identity::load(tmp.path().join("id")).unwrap();
        assert_eq!(loaded.fingerprint(), id.fingerprint());
        assert_eq!(loaded.cert_chain(), id.cert_chain());
        assert_eq!(
            loaded.private_key().secret_der(),
            id.private_key().secret_der()
        );
    }

    #[test]
    fn missing_directory_is_io_for_load() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(matches!(
            Identity::load(tmp.path().join("absent")),
            Err(Error::Io(_))
        ));
    }

    #[test]
    fn from_pem_round_trips_a_ca_signed_leaf() {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .signed_by(&leaf_key, &ca, &ca_key)
            .unwrap();

        let chain_pem = format!("{}{}", leaf.pem(), ca.pem());
        let id = Identity::from_pem(&chain_pem, &leaf_key.serialize_pem()).unwrap();
        assert_eq!(
            id.fingerprint(),
            Fingerprint::of_public_key(&leaf_key.public_key_der())
        );
        assert_eq!(id.cert_chain(), vec![leaf.der().clone(), ca.der().clone()]);

        // Through save/load and back.
        let tmp = tempfile::tempdir().unwrap();
        id.save(tmp.path().join("id")).unwrap();
        let loaded = Identity::load(tmp.path().join("id")).unwrap();
        assert_eq!(loaded.fingerprint(), id.fingerprint());
        assert_eq!(loaded.cert_chain(), id.cert_chain());
    }

    #[test]
    fn from_pem_refuses_bad_pem_and_a_mismatched_key() {
        let id_key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["weida".to_string()])
            .unwrap()
            .self_signed(&id_key)
            .unwrap();
        let other_key = rcgen::KeyPair::generate().unwrap();
        for (chain, key) in [
            (cert.pem(), other_key.serialize_pem()),
            (String::new(), id_key.serialize_pem()),
            (cert.pem(), String::new()),
            (
                "-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n".to_string(),
                id_key.serialize_pem(),
            ),
        ] {
            match Identity::from_pem(&chain, &key) {
                Err(Error::InvalidConfig(_)) => {}
                other => panic!("expected InvalidConfig, got {other:?}"),
            }
        }
        match Identity::from_pem(&cert.pem(), &other_key.serialize_pem()) {
            Err(Error::InvalidConfig(why)) => assert!(why.contains("does not match"), "{why}"),
            other => panic!("expected a mismatch, got {other:?}"),
        }
    }

    #[test]
    fn fingerprint_is_sha256_of_spki_and_survives_recertification() {
        use sha2::{Digest, Sha256};

        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let first = Identity::self_signed(&key).unwrap();
        let spki = key.public_key_der();
        let digest: [u8; 32] = Sha256::digest(&spki).into();
        assert_eq!(first.fingerprint().as_bytes(), &digest);
        assert_eq!(
            fingerprint_of_certificate(&first.cert_chain()[0]).unwrap(),
            first.fingerprint()
        );

        // A second, different certificate for the same key pair.
        let mut params = rcgen::CertificateParams::new(vec!["elsewhere".to_string()]).unwrap();
        params.not_after = rcgen::date_time_ymd(2040, 1, 1);
        let second_cert = params.self_signed(&key).unwrap();
        assert_ne!(second_cert.der(), &first.cert_chain()[0]);
        let second = Identity::from_pem(&second_cert.pem(), &key.serialize_pem()).unwrap();
        assert_eq!(second.fingerprint(), first.fingerprint());
    }

    #[test]
    fn fingerprint_of_certificate_refuses_garbage_as_protocol() {
        assert!(matches!(
            fingerprint_of_certificate(b"not a certificate"),
            Err(Error::Protocol(_))
        ));
        let mut der = Identity::ephemeral().cert_chain()[0].to_vec();
        der.push(0);
        assert!(matches!(
            fingerprint_of_certificate(&der),
            Err(Error::Protocol(_))
        ));
    }

    #[test]
    fn ephemeral_identities_differ_and_debug_hides_the_key() {
        let a = Identity::ephemeral();
        let b = Identity::ephemeral();
        assert_ne!(a.fingerprint(), b.fingerprint());
        let shown = format!("{a:?}");
        assert!(shown.contains(&a.fingerprint().to_string()), "{shown}");
        let key_pem = a.key_pem().unwrap();
        let key_b64 = key_pem.lines().nth(1).unwrap();
        assert!(!shown.contains(key_b64), "{shown}");
        assert!(!shown.contains("PRIVATE"), "{shown}");
    }

    #[test]
    fn pem_encoding_matches_rcgen() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["weida".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let norm = |s: &str| s.replace("\r\n", "\n");
        assert_eq!(pem_encode("CERTIFICATE", cert.der()), norm(&cert.pem()));
        assert_eq!(
            pem_encode("PRIVATE KEY", &key.serialize_der()),
            norm(&key.serialize_pem())
        );
        assert_eq!(pem_encode("X", b""), "-----BEGIN X-----\n-----END X-----\n");
        assert!(pem_encode("X", b"a").contains("YQ==\n"));
        assert!(pem_encode("X", b"ab").contains("YWI=\n"));
    }
}
