//! The runners built into the saltq master, as a minion's `sys.list_runner_functions` and
//! `sys.runner_doc` list and document them (a Salt minion loads Salt's runner modules into a
//! loader of its own; a saltq minion knows the runners its master has built in). The
//! master's test `runners::tests::minions_list_every_built_in_runner` keeps this table equal to
//! the master's own, names and docs.

/// Each built-in runner's name and doc, sorted by name.
pub const RUNNERS: &[(&str, &str)] = &[
    (
        "cache.clear_all",
        "Clear the cached grains and pillar of the targeted minions.",
    ),
    (
        "cache.clear_grains",
        "Clear the cached grains of the targeted minions.",
    ),
    (
        "cache.clear_pillar",
        "Clear the cached pillar of the targeted minions.",
    ),
    (
        "cache.grains",
        "Return cached grains of the targeted minions.",
    ),
    (
        "cache.mine",
        "Return cached mine data of the targeted minions.",
    ),
    (
        "cache.pillar",
        "Return cached pillars of the targeted minions.",
    ),
    (
        "doc.wheel",
        "Return the inline documentation of every wheel function.",
    ),
    (
        "event.send",
        "Send an event to the Salt Master's event bus.",
    ),
    (
        "jobs.active",
        "Return a report on all actively running jobs from a job id centric perspective.",
    ),
    (
        "jobs.exit_success",
        "Check if a job has been executed and exit successfully.",
    ),
    (
        "jobs.last_run",
        "List all detectable jobs and associated functions: the last one.",
    ),
    ("jobs.list_job", "List a specific job given by its jid."),
    (
        "jobs.list_jobs",
        "List all detectable jobs and associated functions.",
    ),
    (
        "jobs.list_jobs_filter",
        "List all detectable jobs and associated functions, the newest `count` of them.",
    ),
    (
        "jobs.lookup_jid",
        "Return the printout from a previously executed job.",
    ),
    (
        "jobs.print_job",
        "Print a specific job's detail given by its jid, including the return data.",
    ),
    (
        "manage.alived",
        "Print a list of all minions that are up according to presence detection.",
    ),
    (
        "manage.allowed",
        "Print a list of all minions that are up according to presence detection.",
    ),
    (
        "manage.down",
        "Print a list of all the down or unresponsive salt minions; removekeys=True deletes their keys.",
    ),
    (
        "manage.joined",
        "Print a list of all minions that are up according to presence detection.",
    ),
    (
        "manage.list_not_state",
        "Print a list of all minions that are NOT up according to presence detection.",
    ),
    (
        "manage.list_state",
        "Print a list of all minions that are up according to presence detection.",
    ),
    (
        "manage.not_present",
        "Print a list of all minions that are NOT up according to presence detection.",
    ),
    (
        "manage.present",
        "Print a list of all minions that are up according to presence detection (no commands sent).",
    ),
    (
        "manage.status",
        "Print the status of all known salt minions: {up: [...], down: [...]}.",
    ),
    (
        "manage.up",
        "Print a list of all of the minions that are up.",
    ),
    (
        "manage.versions",
        "Check the version of active minions against the master's.",
    ),
    (
        "mine.get",
        "Gathers the data from the specified minions' mine, pass in the target, function to look up and the target type.",
    ),
    (
        "pillar.show_pillar",
        "Returns the compiled pillar either of a specific minion or just the global available pillars. This function assumes that no minion has the id ``*``.",
    ),
    (
        "pillar.show_top",
        "Returns the compiled top data for pillar for a specific minion. If no minion is specified, we use the first minion we find.",
    ),
    (
        "saltutil.sync_all",
        "Sync master-side external runners from file_roots/_runners.",
    ),
    (
        "saltutil.sync_runners",
        "Sync master-side external runners from file_roots/_runners.",
    ),
    (
        "state.event",
        "Watch the master's event bus and block until count events whose tag matches tagmatch (a glob or a regular expression) were seen; count=-1 waits forever. `saltq run state.event` prints each matching event as `tag<TAB>json`.",
    ),
    (
        "state.orch",
        "Execute a state run from the master, used as a powerful orchestration system.\n\nCLI Examples:\n\n    saltq run state.orchestrate webserver\n    saltq run state.orchestrate webserver saltenv=dev test=True",
    ),
    (
        "state.orch_show_sls",
        "Display the state data of an orchestration SLS as the master renders it.",
    ),
    (
        "state.orchestrate",
        "Execute a state run from the master, used as a powerful orchestration system.\n\nCLI Examples:\n\n    saltq run state.orchestrate webserver\n    saltq run state.orchestrate webserver saltenv=dev test=True",
    ),
    (
        "state.orchestrate_show_sls",
        "Display the state data of an orchestration SLS as the master renders it.",
    ),
    (
        "state.orchestrate_single",
        "Execute a single state orchestration routine.\n\n    saltq run state.orchestrate_single fun=salt.wheel name=key.list_all",
    ),
    (
        "state.sls",
        "Execute a state run from the master, used as a powerful orchestration system.\n\nCLI Examples:\n\n    saltq run state.orchestrate webserver\n    saltq run state.orchestrate webserver saltenv=dev test=True",
    ),
    (
        "test.arg",
        "Return the arguments and keyword arguments it was given.",
    ),
    ("test.echo", "Return the text it is given."),
    ("test.sleep", "Sleep s_time seconds, then return True."),
    ("test.stream", "Fire a progress event, then return True."),
];
