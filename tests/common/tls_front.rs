//! A TLS front for the simulator, for kubectl as a member: kubectl sends a kubeconfig's
//! credentials (the `user:EMAIL` bearer token) only to an `https` server, and the
//! simulator speaks plain HTTP. Each connection is decrypted with a fixed self-signed
//! certificate (tests/fixtures/kube_tls) and relayed byte for byte to the simulator.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};

const CERT: &[u8] = include_bytes!("../fixtures/kube_tls/cert.pem");
const KEY: &[u8] = include_bytes!("../fixtures/kube_tls/key.pem");
/// How long one side is waited on before the other is looked at.
const POLL: Duration = Duration::from_millis(2);

/// Start a front relaying to `backend`; its `https://127.0.0.1:{port}` base.
pub fn start(backend: SocketAddr) -> String {
    kineticd::auth::install_tls_provider();
    let certs = CertificateDer::pem_slice_iter(CERT)
        .collect::<Result<Vec<_>, _>>()
        .expect("fixture certificate");
    let key = PrivateKeyDer::from_pem_slice(KEY).expect("fixture key");
    let config = Arc::new(
        ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("TLS config"),
    );
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind TLS front");
    let port = listener.local_addr().expect("local addr").port();
    std::thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            let config = config.clone();
            std::thread::spawn(move || {
                let _closed = relay(client, config, backend);
            });
        }
    });
    format!("https://127.0.0.1:{port}")
}

fn idle(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Relay one connection until either side closes it.
fn relay(
    mut client: TcpStream,
    config: Arc<ServerConfig>,
    backend: SocketAddr,
) -> std::io::Result<()> {
    let mut tls = ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut upstream = TcpStream::connect(backend)?;
    client.set_read_timeout(Some(POLL))?;
    upstream.set_read_timeout(Some(POLL))?;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match tls.read_tls(&mut client) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                tls.process_new_packets().map_err(std::io::Error::other)?;
                loop {
                    match tls.reader().read(&mut buf) {
                        Ok(0) => return Ok(()),
                        Ok(n) => upstream.write_all(&buf[..n])?,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                }
            }
            Err(e) if idle(&e) => {}
            Err(e) => return Err(e),
        }
        if !tls.is_handshaking() {
            match upstream.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => tls.writer().write_all(&buf[..n])?,
                Err(e) if idle(&e) => {}
                Err(e) => return Err(e),
            }
        }
        while tls.wants_write() {
            tls.write_tls(&mut client)?;
        }
    }
}
