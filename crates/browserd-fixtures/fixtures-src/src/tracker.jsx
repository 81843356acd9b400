// The issue tracker app (React production build): a sidebar of <a> without href, a list of 20 issue rows whose
// title links and status chips are handled by one click listener delegated to the list, and a fixed-position
// confirmation popup for deleting the selected issue.
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { flushSync } from 'react-dom';
import { record, pageData } from './record.js';

const NEXT_STATUS = { Open: 'In progress', 'In progress': 'Done', Done: 'Open' };

function App({ data }) {
  const [view, setView] = useState(data.views[0]);
  const [issues, setIssues] = useState(data.issues);
  const [opened, setOpened] = useState(null);
  const [confirming, setConfirming] = useState(false);

  const onListClick = (event) => {
    const row = event.target.closest('[data-issue]');
    if (!row) return;
    const id = row.dataset.issue;
    if (event.target.closest('.issue-title')) {
      setOpened(id);
      record(`open:${id}`);
    } else if (event.target.closest('.chip')) {
      setIssues((all) => all.map((i) => (i.id === id ? { ...i, status: NEXT_STATUS[i.status] } : i)));
      record(`status:${id}`);
    }
  };

  return (
    <div className="app">
      <nav className="sidebar">
        <div className="brand">Tracker</div>
        {data.views.map((name) => (
          <a
            key={name}
            className={name === view ? 'sidebar-item active' : 'sidebar-item'}
            onClick={() => {
              setView(name);
              record(`nav:${name}`);
            }}
          >
            {name}
          </a>
        ))}
      </nav>
      <main>
        <header className="toolbar">
          <h1>{view}</h1>
          <span className="muted">{opened ? `Opened: ${opened}` : 'Opened: none'}</span>
          <button
            type="button"
            className="danger"
            onClick={() => {
              setConfirming(true);
              record('delete:ask');
            }}
          >
            Delete selected
          </button>
        </header>
        <ul className="issues" onClick={onListClick}>
          {issues.map((issue) => (
            <li key={issue.id} className="issue-row" data-issue={issue.id}>
              <span className="issue-id">{issue.id}</span>
              <a className="issue-title">{issue.title}</a>
              <span className={`chip chip-${issue.status.replace(' ', '-').toLowerCase()}`}>{issue.status}</span>
            </li>
          ))}
        </ul>
      </main>
      {confirming && (
        <div className="popup">
          <p>Delete the selected issue? This cannot be undone.</p>
          <button
            type="button"
            onClick={() => {
              setConfirming(false);
              record('delete:cancel');
            }}
          >
            Cancel
          </button>
          <button
            type="button"
            className="danger"
            onClick={() => {
              setConfirming(false);
              record('delete:confirm');
            }}
          >
            Delete
          </button>
        </div>
      )}
    </div>
  );
}

const root = createRoot(document.getElementById('root'));
flushSync(() => root.render(<App data={pageData()} />));
