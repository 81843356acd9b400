//! Shared harness of the lifecycle tests: a runtime over the fake provider and the fake clock.

#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;

use browserd_core::error::{CoreError, ErrorKind};
use browserd_core::lifecycle::TabView;
use browserd_core::provider::{SessionKey, TabHandle};
use browserd_core::runtime::{Runtime, RuntimeConfig};
use browserd_core::tabs::{Provenance, ResourceState};
use browserd_protocol::ObserveParams;
use browserd_test_support::fake_clock::FakeClock;
use browserd_test_support::fake_provider::FakeProvider;

pub struct Harness {
    pub fake: Arc<FakeProvider>,
    pub clock: FakeClock,
    pub rt: Runtime,
}

pub fn harness() -> Harness {
    harness_with(RuntimeConfig::default())
}

pub fn harness_with(config: RuntimeConfig) -> Harness {
    let fake = Arc::new(FakeProvider::new());
    let clock = FakeClock::new();
    let rt = Runtime::new(fake.clone(), Arc::new(clock.clone()), config);
    Harness { fake, clock, rt }
}

pub fn key(name: &str) -> SessionKey {
    SessionKey(name.to_owned())
}

impl Harness {
    /// Open a session and activate its tools (the skill loaded once).
    pub async fn session(&self, name: &str) -> SessionKey {
        let s = key(name);
        self.rt.open_session(&s).await.expect("open session");
        assert!(self.rt.activate_tools(&s).await.expect("activate tools"));
        s
    }

    pub async fn open(&self, s: &SessionKey) -> TabHandle {
        self.rt.open_tab(s, "http://127.0.0.1/page").await.expect("open tab").tab
    }

    pub async fn observe(&self, s: &SessionKey, tab: TabHandle) -> Result<(), CoreError> {
        self.rt.observe(s, tab, &ObserveParams::default()).await.map(|_| ())
    }

    pub async fn view(&self, s: &SessionKey, tab: TabHandle) -> Option<TabView> {
        self.rt.inspect(|e| e.view(s, tab))
    }

    pub fn state(&self, tab: TabHandle) -> ResourceState {
        self.rt.inspect(|e| e.tabs().get(tab).map(|r| r.state)).expect("known tab")
    }

    pub fn provenance(&self, viewer: &SessionKey, tab: TabHandle) -> Provenance {
        self.rt.inspect(|e| e.tabs().get(tab).map(|r| r.provenance(viewer))).expect("known tab")
    }

    pub fn assert_no_violations(&self) {
        let v = self.fake.violations();
        assert!(v.is_empty(), "the runtime touched tabs it does not own: {v:?}");
    }
}

pub fn kind(res: Result<impl std::fmt::Debug, CoreError>) -> ErrorKind {
    res.expect_err("expected an error").kind
}
