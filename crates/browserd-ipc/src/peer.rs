//! Peer credentials of a Unix-socket connection (`SO_PEERCRED` on Linux) and the same-uid decision.

use std::io;

use tokio::net::UnixStream;

/// Who is on the other end of a connection, as the kernel reports it at connect time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    /// Effective uid of the peer process.
    pub uid: u32,
    /// Effective gid of the peer process.
    pub gid: u32,
    /// The peer's pid, when the platform reports it (Linux does).
    pub pid: Option<i32>,
}

impl PeerCred {
    /// Reads the peer credentials of a connected stream.
    pub fn of(stream: &UnixStream) -> io::Result<Self> {
        let cred = stream.peer_cred()?;
        Ok(PeerCred { uid: cred.uid(), gid: cred.gid(), pid: cred.pid() })
    }
}

/// A peer whose uid differs from ours: refused, and the connection is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "refused a connection from uid {} (pid {}): browserd serves only its own user (uid {expected_uid}); run the \
     client as that user",
    peer.uid,
    match peer.pid { Some(pid) => pid.to_string(), None => "unknown".to_string() }
)]
pub struct PeerRefused {
    /// The uid the endpoint belongs to.
    pub expected_uid: u32,
    /// The refused peer.
    pub peer: PeerCred,
}

/// The peer check made on every accepted connection (and by clients on the broker): the peer's effective uid must
/// equal ours. Root gets no exception: a root process can read the socket anyway, and it is out of scope.
pub fn check_peer(expected_uid: u32, peer: &PeerCred) -> Result<(), PeerRefused> {
    if peer.uid == expected_uid { Ok(()) } else { Err(PeerRefused { expected_uid, peer: *peer }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_uid_is_accepted_whatever_the_gid_and_pid() {
        let peer = PeerCred { uid: 1000, gid: 5, pid: None };
        assert_eq!(check_peer(1000, &peer), Ok(()));
    }

    #[test]
    fn other_uid_is_refused_with_both_uids_in_the_message() {
        let peer = PeerCred { uid: 1001, gid: 1000, pid: Some(4242) };
        let err = check_peer(1000, &peer).unwrap_err();
        assert_eq!(err, PeerRefused { expected_uid: 1000, peer });
        let text = err.to_string();
        assert!(text.contains("uid 1001") && text.contains("pid 4242") && text.contains("uid 1000"), "{text}");
    }

    #[test]
    fn root_is_refused_by_a_user_broker_and_users_by_a_root_broker() {
        assert!(check_peer(1000, &PeerCred { uid: 0, gid: 0, pid: Some(1) }).is_err());
        assert!(check_peer(0, &PeerCred { uid: 1000, gid: 1000, pid: Some(2) }).is_err());
    }
}
