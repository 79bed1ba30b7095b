//! Finding the master of a replicated deployment through its sentinels:
//! each is asked in turn (`SENTINEL get-master-addr-by-name`), and the
//! server it names must say with `ROLE` that it is the master, since a
//! sentinel that has not heard of a failover yet names the old one. Rounds
//! of asking repeat, with a pause, while a failover is under way, all
//! within the exchange's deadline and a bounded number of rounds. Also
//! here: reading `ROLE`, which `route` uses to say what a server is.

use std::time::Duration;

use super::cluster::Node;
use super::resp::{Connection, Deadline, Reply, Trouble};
use super::target::{self, Discovery};
use super::tls::Trust;
use crate::state::store::one_line_within;

/// What `ROLE` says a server is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Role {
    Master,
    /// A replica, and the master it follows (when it said).
    Replica(Option<Node>),
    Sentinel,
    /// Anything else: the server's words, or what came.
    Unknown(String),
}

impl Role {
    pub(super) fn of(reply: &Reply) -> Role {
        let Reply::Array(Some(items)) = reply else {
            return Role::Unknown(format!("{reply:?}"));
        };
        let text = |i: usize| match items.get(i) {
            Some(Reply::Bulk(Some(bytes))) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        };
        match text(0).as_deref() {
            Some("master") => Role::Master,
            Some("slave" | "replica") => Role::Replica(text(1).zip(items.get(2)).and_then(
                |(host, port)| match port {
                    Reply::Int(port) => Some(Node {
                        host,
                        port: u16::try_from(*port).ok()?,
                    }),
                    _ => None,
                },
            )),
            Some("sentinel") => Role::Sentinel,
            _ => Role::Unknown(format!("{reply:?}")),
        }
    }
}

/// Ask `connection`'s server what it is.
pub(super) fn role(connection: &mut Connection) -> Result<Role, Trouble> {
    connection.send(&[vec![b"ROLE"]])?;
    Ok(Role::of(&connection.read_large()?))
}

/// What a sentinel answered about the master.
#[derive(Debug, PartialEq, Eq)]
enum Named {
    Master(Node),
    /// It knows no master of that name.
    Unknown,
    /// An error: not a sentinel, or one that refused.
    Refused(String),
}

fn named(reply: Reply) -> Named {
    match reply {
        Reply::Array(Some(items)) => match items.as_slice() {
            [Reply::Bulk(Some(host)), Reply::Bulk(Some(port))] => {
                match std::str::from_utf8(port).ok().and_then(|p| p.parse().ok()) {
                    Some(port) => Named::Master(Node {
                        host: String::from_utf8_lossy(host).into_owned(),
                        port,
                    }),
                    None => Named::Refused("a port that is not a number".into()),
                }
            }
            _ => Named::Refused("an answer that is not [host, port]".into()),
        },
        Reply::Array(None) | Reply::Bulk(None) => Named::Unknown,
        Reply::Error(text) => Named::Refused(one_line_within(&text, 100)),
        other => Named::Refused(one_line_within(&format!("{other:?}"), 100)),
    }
}

/// The most rounds of asking every sentinel.
const MOST_ROUNDS: u32 = 20;
/// The pause after the first round; it doubles up to `LONGEST_PAUSE`.
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const LONGEST_PAUSE: Duration = Duration::from_millis(500);

/// The master `sentinels` name, connected and confirmed by `ROLE`.
pub(super) fn discover(
    sentinels: &Discovery,
    trust: &Trust,
    deadline: &Deadline,
) -> Result<(Node, Connection), Trouble> {
    let name = &sentinels.master;
    let count = sentinels.sentinels.len();
    let mut said = Said::default();
    let (mut unknown, mut not_sentinels) = (0, 0);
    for round in 0..MOST_ROUNDS {
        (unknown, not_sentinels) = (0, 0);
        for (i, url) in sentinels.sentinels.iter().enumerate() {
            let at = target::node(url);
            let answer = Connection::open(url, &deadline.share(count - i), trust).and_then(
                |mut connection| {
                    connection.send(&[vec![
                        b"SENTINEL",
                        b"get-master-addr-by-name",
                        name.as_bytes(),
                    ]])?;
                    connection.read()
                },
            );
            let master = match answer.map(named) {
                Ok(Named::Master(master)) => master,
                Ok(Named::Unknown) => {
                    unknown += 1;
                    said.push(format!("{at}: no master named {name}"));
                    continue;
                }
                Ok(Named::Refused(why)) => {
                    not_sentinels += 1;
                    said.push(format!("{at}: {why}"));
                    continue;
                }
                Err(Trouble::Interrupted) => return Err(Trouble::Interrupted),
                Err(Trouble::TimedOut) if deadline.left().is_err() => return Err(said.timed_out()),
                Err(trouble) => {
                    said.push(format!("{at}: {}", trouble.brief()));
                    continue;
                }
            };
            // A master that never answers (its host is gone) leaves time
            // to ask again.
            let url = target::at(&sentinels.data, &master);
            let confirmed = Connection::open(&url, &deadline.share(2), trust)
                .and_then(|mut connection| Ok((role(&mut connection)?, connection)));
            match confirmed {
                Ok((Role::Master, mut connection)) => {
                    connection.set_deadline(*deadline);
                    return Ok((master, connection));
                }
                Ok((other, _)) => said.push(format!(
                    "{at} names {master}, which answers as {}",
                    what(&other)
                )),
                Err(Trouble::TimedOut) if deadline.left().is_err() => return Err(said.timed_out()),
                Err(trouble @ (Trouble::Interrupted | Trouble::Auth(_))) => return Err(trouble),
                Err(trouble) => said.push(format!("{at} names {master}: {}", trouble.brief())),
            }
        }
        // Asking again helps only while a failover may be under way.
        if unknown + not_sentinels == count || round + 1 == MOST_ROUNDS {
            break;
        }
        let pause = FIRST_PAUSE
            .saturating_mul(1 << round.min(10))
            .min(LONGEST_PAUSE);
        deadline.pause(pause)?;
    }
    let advice = if not_sentinels == count {
        ": redis+sentinel:// lists sentinels (port 26379 unless given), not the servers"
    } else if unknown > 0 {
        ": check the master's name at the end of the redis+sentinel:// URL (SENTINEL MASTERS lists them)"
    } else {
        ": a failover under way (a --state-timeout longer than a failover waits for it), or sentinels that disagree (SENTINEL MASTERS on each)"
    };
    Err(Trouble::Other(format!(
        "no sentinel named a master of {name} that answers as one ({}){advice}",
        said.0.join("; ")
    )))
}

/// What the sentinels and the servers they named said, each thing once,
/// the latest few.
#[derive(Default)]
struct Said(Vec<String>);

impl Said {
    fn push(&mut self, what: String) {
        self.0.retain(|said| *said != what);
        if self.0.len() == 3 {
            self.0.remove(0);
        }
        self.0.push(what);
    }

    /// The deadline passed: a timeout, with what was heard till then.
    fn timed_out(self) -> Trouble {
        if self.0.is_empty() {
            Trouble::TimedOut
        } else {
            Trouble::Other(format!(
                "no master found before the deadline (--state-timeout): {}",
                self.0.join("; ")
            ))
        }
    }
}

/// What a server that is not the master is, for messages.
pub(super) fn what(role: &Role) -> String {
    match role {
        Role::Master => "the master".into(),
        Role::Replica(Some(master)) => format!("a replica (of {master})"),
        Role::Replica(None) => "a replica".into(),
        Role::Sentinel => "a sentinel".into(),
        Role::Unknown(said) => format!("something else ({})", one_line_within(said, 100)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(text: &str) -> Reply {
        Reply::Bulk(Some(text.as_bytes().to_vec()))
    }

    #[test]
    fn role_is_read() {
        let master = Reply::Array(Some(vec![
            bulk("master"),
            Reply::Int(3_129_659),
            Reply::Array(Some(vec![Reply::Array(Some(vec![
                bulk("127.0.0.1"),
                bulk("9001"),
                bulk("3129242"),
            ]))])),
        ]));
        assert_eq!(Role::of(&master), Role::Master);
        let replica = Reply::Array(Some(vec![
            bulk("slave"),
            bulk("127.0.0.1"),
            Reply::Int(9000),
            bulk("connected"),
            Reply::Int(3_167_038),
        ]));
        let of = Node {
            host: "127.0.0.1".into(),
            port: 9000,
        };
        assert_eq!(Role::of(&replica), Role::Replica(Some(of)));
        assert_eq!(what(&Role::of(&replica)), "a replica (of 127.0.0.1:9000)");
        let odd = Reply::Array(Some(vec![bulk("slave"), bulk("h"), Reply::Int(70000)]));
        assert_eq!(Role::of(&odd), Role::Replica(None));
        let sentinel = Reply::Array(Some(vec![
            bulk("sentinel"),
            Reply::Array(Some(vec![bulk("mymaster")])),
        ]));
        assert_eq!(Role::of(&sentinel), Role::Sentinel);
        assert!(matches!(Role::of(&Reply::Int(1)), Role::Unknown(_)));
        assert!(matches!(
            Role::of(&Reply::Error("ERR unknown command 'ROLE'".into())),
            Role::Unknown(_)
        ));
    }

    #[test]
    fn a_sentinels_answer_is_read() {
        assert_eq!(
            named(Reply::Array(Some(vec![bulk("10.0.0.5"), bulk("6380")]))),
            Named::Master(Node {
                host: "10.0.0.5".into(),
                port: 6380
            })
        );
        assert_eq!(named(Reply::Array(None)), Named::Unknown);
        assert_eq!(named(Reply::Bulk(None)), Named::Unknown);
        assert!(matches!(
            named(Reply::Error("ERR unknown command 'SENTINEL'\nx".into())),
            Named::Refused(why) if why.contains("unknown command") && !why.contains('\n')
        ));
        for odd in [
            Reply::Array(Some(vec![bulk("h"), bulk("port")])),
            Reply::Array(Some(vec![bulk("h")])),
            Reply::Int(3),
        ] {
            assert!(matches!(named(odd), Named::Refused(_)));
        }
    }
}
