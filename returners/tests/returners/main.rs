//! Integration tests of the returners against real servers: PostgreSQL, MariaDB/MySQL and
//! Redis when `SALTQ_TEST_POSTGRES`, `SALTQ_TEST_MYSQL` and `SALTQ_TEST_REDIS` name them (a test
//! whose variable is unset says so and passes), plus local files, sockets and an HTTP server.

mod mysql;
mod pg;
mod queue;
mod rawfile;
mod redis;
mod support;
mod syslog;
mod webhook;
