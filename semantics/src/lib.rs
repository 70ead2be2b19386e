//! Salt's rules without I/O, shared by the saltq master, minion and CLI: job
//! ids, targeting, the typing of CLI arguments, batch mode, the outputters, and
//! the one home of the Python behaviour they imitate (`python`).

pub mod args;
pub mod batch;
pub mod jid;
pub mod output;
pub mod python;
pub mod schedule;
pub mod target;

pub use jid::{Jid, JidError, JidGenerator};
pub use target::{MinionFacts, NodegroupDef, Nodegroups, Target, TargetError, TargetType};
