// The issue tracker app (React production build): a sidebar of <a> without href, a list of 20 issue rows whose
// title links and status chips are handled by one click listener delegated to the list, and a fixed-position
// confirmation popup for deleting the selected issue, and a modal (a full-window backdrop holding an aria-modal
// dialog, as component libraries build them) for archiving every issue.
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
  const [archiving, setArchiving] = useState(false);

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
          <button
            type="button"
            onClick={() => {
              setArchiving(true);
              record('archive:ask');
            }}
          >
            Archive all
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
      {archiving && (
        <div className="backdrop">
          <div className="dialog" role="dialog" aria-modal="true" aria-labelledby="archive-title">
            <h2 id="archive-title">Archive all issues?</h2>
            <p>Every issue in this view moves to the archive.</p>
            <button
              type="button"
              onClick={() => {
                setArchiving(false);
                record('archive:cancel');
              }}
            >
              Keep them
            </button>
            <button
              type="button"
              onClick={() => {
                setArchiving(false);
                record('archive:confirm');
              }}
            >
              Archive
            </button>
          </div>
        </div>
      )}
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
