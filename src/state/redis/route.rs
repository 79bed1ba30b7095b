//! Which server each command of an exchange goes to, and what to do when
//! the deployment answers that it belongs elsewhere:
//!
//! - One server: there; if it is a node of a Redis Cluster, its `MOVED`
//!   answers are followed (and remembered for the rest of the run).
//! - Cluster seeds: the slot map is asked of the first seed that answers
//!   (`CLUSTER SLOTS`), and each key goes to the master serving its slot.
//!   `MOVED` updates the map; `ASK` (a slot being migrated) is followed
//!   once, with `ASKING`; `TRYAGAIN` waits a little. At most
//!   [`MOST_REDIRECTS`] per command, so nodes that disagree (or a hostile
//!   one answering `MOVED` in a loop) cost a message, never a hang.
//! - Sentinel: the master the sentinels name (see `sentinel`), asked anew
//!   by each exchange; when it refuses the connection or answers
//!   `READONLY` (a failover made it a replica), the sentinels are asked
//!   again, a bounded number of times.
//!
//! A replica's `READONLY` on a plain URL is an error that says what the
//! server is and what to point `--state-url` at instead. Everything stays
//! within the exchange's one deadline.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::cluster::{self, Node, Redirect, SlotMap};
use super::resp::{Connection, Deadline, Reply, Trouble};
use super::sentinel::{self, Role};
use super::target::{self, Target};
use super::tls::Trust;
use crate::state::store::{one_line, one_line_within};

/// The most redirections (`MOVED`, `ASK`, `TRYAGAIN`) one command follows.
pub(super) const MOST_REDIRECTS: u32 = 5;
/// The most times one exchange finds the master (Sentinel) or the slot map
/// (Cluster) again after a server failed it.
const MOST_REDISCOVERIES: u32 = 2;
/// The most connections one exchange keeps open.
const MOST_OPEN: usize = 4;

/// What a store learned about its deployment, kept from one exchange to
/// the next within a run: a Cluster's slot map (from a seed, and what
/// `MOVED` answers said). A Sentinel deployment's master is not kept: each
/// exchange asks the sentinels, so that the result a run records after a
/// failover that happened while its command ran goes to the new master,
/// not to the old one (which may take writes, to be lost, for seconds
/// before it is told that it is a replica).
#[derive(Default)]
pub(super) struct Known {
    slots: Option<SlotMap>,
}

/// The servers of one exchange.
pub(super) struct Router<'a> {
    target: &'a Target,
    trust: &'a Trust,
    deadline: &'a Deadline,
    known: &'a Mutex<Known>,
    /// Sentinel: the master this exchange found.
    master: Option<Node>,
    open: Vec<(Node, Connection)>,
    rediscovered: u32,
}

impl<'a> Router<'a> {
    pub(super) fn new(
        target: &'a Target,
        trust: &'a Trust,
        deadline: &'a Deadline,
        known: &'a Mutex<Known>,
    ) -> Router<'a> {
        Router {
            target,
            trust,
            deadline,
            known,
            master: None,
            open: Vec::new(),
            rediscovered: 0,
        }
    }

    fn known(&self) -> MutexGuard<'a, Known> {
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Send `command`, whose key is `key`, to the server that serves it,
    /// following the deployment; its reply, or an error (an error reply
    /// included, naming the node when it is not the URL's own server).
    pub(super) fn call(&mut self, key: &[u8], command: &[&[u8]]) -> Result<Reply, Trouble> {
        let slot = cluster::slot(key);
        let mut node = self.home(slot)?;
        let mut asking = false;
        let mut hops = 0;
        loop {
            let reply = match self.send(&node, asking, command) {
                Ok(reply) => reply,
                Err(trouble) if self.may_look_again(&trouble) => {
                    self.forget(&node);
                    (node, asking) = (self.home(slot)?, false);
                    continue;
                }
                Err(trouble) => return Err(self.at(&node, trouble)),
            };
            let Reply::Error(text) = &reply else {
                return Ok(reply);
            };
            let redirect = Redirect::parse(text);
            let again = text.starts_with("TRYAGAIN");
            if redirect.is_some() || again {
                hops += 1;
                if hops > MOST_REDIRECTS {
                    return Err(Trouble::Other(format!(
                        "more than {MOST_REDIRECTS} redirections for one key (the last from {node}: {}): the cluster's nodes disagree on who serves slot {slot}; CLUSTER SLOTS on each node shows what each believes",
                        one_line(text)
                    )));
                }
            }
            match redirect {
                Some(Redirect::Moved(slot, to)) => {
                    let to = to.seen_from(&node);
                    self.known()
                        .slots
                        .get_or_insert_default()
                        .moved(slot, to.clone());
                    (node, asking) = (to, false);
                }
                Some(Redirect::Ask(_, to)) => (node, asking) = (to.seen_from(&node), true),
                None if again => self.deadline.pause(Duration::from_millis(10 << hops))?,
                None if text.starts_with("READONLY") || text.contains("-READONLY") => {
                    if matches!(self.target, Target::Sentinel(_))
                        && self.rediscovered < MOST_REDISCOVERIES
                    {
                        self.rediscovered += 1;
                        self.forget(&node);
                        (node, asking) = (self.home(slot)?, false);
                    } else {
                        return Err(self.not_master(&node));
                    }
                }
                None => return Err(self.refused(&node, text)),
            }
        }
    }

    /// Where a command on `slot` goes first.
    fn home(&mut self, slot: u16) -> Result<Node, Trouble> {
        let owner = |known: &Known| known.slots.as_ref().and_then(|m| m.owner(slot).cloned());
        match self.target {
            Target::Server(url) => Ok(owner(&self.known()).unwrap_or_else(|| target::node(url))),
            Target::Cluster(seeds) => {
                if self.known().slots.is_none() {
                    self.learn_slots(seeds)?;
                }
                Ok(owner(&self.known()).unwrap_or_else(|| target::node(&seeds[0])))
            }
            Target::Sentinel(sentinels) => {
                if let Some(master) = self.master.clone() {
                    return Ok(master);
                }
                let (master, connection) =
                    sentinel::discover(sentinels, self.trust, self.deadline)?;
                self.master = Some(master.clone());
                self.keep(master.clone(), connection);
                Ok(master)
            }
        }
    }

    /// The slot map, from the first seed that gives it.
    fn learn_slots(&mut self, seeds: &[super::url::RedisUrl]) -> Result<(), Trouble> {
        let mut said = Vec::new();
        for (i, url) in seeds.iter().enumerate() {
            let seed = target::node(url);
            let share = self.deadline.share(seeds.len() - i);
            let answer = Connection::open(url, &share, self.trust).and_then(|mut connection| {
                connection.send(&[vec![b"CLUSTER", b"SLOTS"]])?;
                Ok((connection.read_large()?, connection))
            });
            match answer {
                Ok((Reply::Error(text), _)) if text.contains("cluster support disabled") => {
                    return Err(Trouble::Other(format!(
                        "{seed} is not a cluster node ({}): several hosts in the state URL are the seed nodes of one Redis Cluster; name one server (redis://HOST:PORT), or the sentinels of a replicated one (redis+sentinel://HOST:26379/MASTER)",
                        one_line(&text)
                    )));
                }
                Ok((reply, mut connection)) => match SlotMap::from_cluster_slots(reply, &seed) {
                    Ok(map) => {
                        self.known().slots = Some(map);
                        connection.set_deadline(*self.deadline);
                        self.keep(seed, connection);
                        return Ok(());
                    }
                    Err(why) => said.push(format!("{seed}: {why}")),
                },
                Err(trouble @ Trouble::Interrupted) => return Err(trouble),
                Err(Trouble::TimedOut) if self.deadline.left().is_err() => {
                    return Err(Trouble::TimedOut);
                }
                Err(trouble) => said.push(format!("{seed}: {}", trouble.brief())),
            }
        }
        Err(Trouble::Other(format!(
            "no seed node gave the cluster's slot map ({}): list nodes of the cluster that are up",
            said.join("; ")
        )))
    }

    /// Whether `trouble` (a server that failed us) is worth finding the
    /// master or the slot map again; counts the times.
    fn may_look_again(&mut self, trouble: &Trouble) -> bool {
        let may = !matches!(self.target, Target::Server(_))
            && matches!(trouble, Trouble::Refused | Trouble::Other(_))
            && self.rediscovered < MOST_REDISCOVERIES;
        self.rediscovered += u32::from(may);
        may
    }

    /// Forget `node` as the master, or the slot map that led to it.
    fn forget(&mut self, node: &Node) {
        self.open.retain(|(open, _)| open != node);
        match self.target {
            Target::Sentinel(_) => self.master = None,
            Target::Cluster(_) => self.known().slots = None,
            Target::Server(_) => {}
        }
    }

    /// The URL of `node`: the one the state URL names for it, else the
    /// state URL's credentials, TLS and database there.
    fn url_for(&self, node: &Node) -> super::url::RedisUrl {
        match self.target {
            Target::Server(url) if target::node(url) == *node => url.clone(),
            Target::Server(url) => target::at(url, node),
            Target::Cluster(seeds) => seeds
                .iter()
                .find(|seed| target::node(seed) == *node)
                .cloned()
                .unwrap_or_else(|| target::at(&seeds[0], node)),
            Target::Sentinel(sentinels) => target::at(&sentinels.data, node),
        }
    }

    fn keep(&mut self, node: Node, connection: Connection) {
        self.open.retain(|(open, _)| *open != node);
        if self.open.len() == MOST_OPEN {
            self.open.remove(0);
        }
        self.open.push((node, connection));
    }

    /// `command` to `node` (after `ASKING` when `asking`), and its reply;
    /// a connection that failed is closed.
    fn send(&mut self, node: &Node, asking: bool, command: &[&[u8]]) -> Result<Reply, Trouble> {
        let at = if let Some(at) = self.open.iter().position(|(open, _)| open == node) {
            at
        } else {
            let connection = Connection::open(&self.url_for(node), self.deadline, self.trust)?;
            // `keep` puts it last.
            self.keep(node.clone(), connection);
            self.open.len() - 1
        };
        let connection = &mut self.open[at].1;
        let mut batch: Vec<Vec<&[u8]>> = Vec::new();
        if asking {
            batch.push(vec![b"ASKING"]);
        }
        batch.push(command.to_vec());
        let result = connection.send(&batch).and_then(|()| {
            if asking && !matches!(connection.read()?, Reply::Status(_)) {
                return Err(Trouble::Other(format!("{node} refused ASKING")));
            }
            connection.read()
        });
        if result.is_err() {
            self.open.retain(|(open, _)| open != node);
        }
        result
    }

    /// Whether the state URL names `node` itself (messages say "Redis at
    /// URL" already).
    fn named(&self, node: &Node) -> bool {
        matches!(self.target, Target::Server(url) if target::node(url) == *node)
    }

    /// `trouble` at `node`, naming it when the URL does not.
    fn at(&self, node: &Node, trouble: Trouble) -> Trouble {
        match trouble {
            Trouble::Refused if !self.named(node) => {
                Trouble::Other(format!("{node}: connection refused"))
            }
            Trouble::Other(why) if !self.named(node) => Trouble::Other(format!("{node}: {why}")),
            other => other,
        }
    }

    /// An error reply, naming the node when the URL does not, and saying
    /// what to do where that is known.
    fn refused(&mut self, node: &Node, text: &str) -> Trouble {
        let advice = if text.starts_with("NOPERM") {
            " (retry runs EVAL with EXISTS, GETRANGE, GET and SET on its retry:* keys: allow them to this user)"
        } else if text.contains("unknown command") && self.role(node) == Some(Role::Sentinel) {
            " (this is a sentinel: name the sentinels with redis+sentinel://HOST:26379/MASTER)"
        } else {
            ""
        };
        // The server's words shortened, so that the advice is said whole.
        let text = one_line_within(text, if advice.is_empty() { 200 } else { 100 });
        match (self.named(node), advice.is_empty()) {
            (true, true) => Trouble::Server(text),
            (true, false) => Trouble::Other(format!("{text}{advice}")),
            (false, _) => Trouble::Other(format!("{node}: {text}{advice}")),
        }
    }

    /// `node` refused a write as a replica: what it is, and what to do.
    fn not_master(&mut self, node: &Node) -> Trouble {
        let is = self
            .role(node)
            .map_or("a replica".into(), |role| sentinel::what(&role));
        let todo = match self.target {
            Target::Sentinel(_) => {
                "the sentinels keep naming a server that is not the master: a failover under way, or sentinels that disagree (SENTINEL MASTERS on each)"
            }
            _ => {
                "point --state-url at the master, or at the sentinels with redis+sentinel://HOST:26379/MASTER so that a failover is followed"
            }
        };
        if self.named(node) {
            Trouble::Other(format!("this server is {is}, and takes no writes: {todo}"))
        } else {
            Trouble::Other(format!("{node} is {is}, and takes no writes: {todo}"))
        }
    }

    /// What `node` says it is, on the connection open to it.
    fn role(&mut self, node: &Node) -> Option<Role> {
        let (_, connection) = self.open.iter_mut().find(|(open, _)| open == node)?;
        sentinel::role(connection).ok()
    }
}
