// The popup: shows the connection, agent sessions and leases, and sends Stop to the service worker.

function li(text) { const e = document.createElement('li'); e.textContent = text; return e; }

async function refresh() {
  const s = await chrome.runtime.sendMessage({ type: 'popup.status' });
  if (!s) return;
  const c = s.connection;
  document.getElementById('conn').textContent = c.state === 'paired'
    ? `paired with browserd${c.broker?.version ? ' ' + c.broker.version : ''}`
    : `${c.state}${c.lastError ? ': ' + c.lastError : ''}`;
  const bySession = new Map();
  for (const o of s.owners) bySession.set(o.session, [...(bySession.get(o.session) ?? []), o]);
  const sessions = document.getElementById('sessions');
  sessions.replaceChildren(...[...bySession].map(([sess, recs]) => li(`${sess.slice(0, 12)}: ${recs.length} tab(s)`)));
  if (!bySession.size) sessions.replaceChildren(li('none'));
  const leases = document.getElementById('leases');
  leases.replaceChildren(...s.gate.leases.map((l) => li(`tab ${l.tabId} · token ${l.token}`)));
  if (!s.gate.leases.length) leases.replaceChildren(li(s.gate.stopped ? 'none (stopped)' : 'none'));
  document.getElementById('stopped').textContent = s.lastStop
    ? `Stopped ${new Date(s.lastStop.at).toLocaleTimeString()} via ${s.lastStop.via}; ${s.lastStop.droppedInputs} input(s) dropped.`
    : '';
}

document.getElementById('stop').addEventListener('click', async () => {
  await chrome.runtime.sendMessage({ type: 'popup.stop' });
  refresh();
});

refresh();
setInterval(refresh, 1000);
