// A team chat (React 19 + @tanstack/react-virtual 3), built the way Slack-like apps are: a channel sidebar of
// clickable rows with unread badges, a message list that is virtualised (only the rows near the bottom exist in the
// DOM at load; older ones are rendered as the list scrolls up), author names and "N replies" that are spans with a
// pointer cursor from class CSS, reaction chips (`aria-pressed` buttons), a "Reply in thread" button per message that
// is transparent until the row is hovered, a composer that is a contenteditable `role="textbox"` with its placeholder
// drawn by CSS `::before`, and a mention picker (a floating listbox) that opens when the draft's last word starts
// with "@". Enter sends the draft. Every click is handled by React's listener on the root.
import { useEffect, useLayoutEffect, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { useVirtualizer } from '@tanstack/react-virtual';
import { record, pageData } from './record.js';

const ROW = 60; // every message row is this tall (CSS `.c-msg` holds it)

function Message({ m, author, onAuthor, onReact, onThread, onReply }) {
  return (
    <div className="c-msg">
      <div className="c-msg-head">
        <span className="c-author" onClick={() => onAuthor(m.author)}>{author.name}</span>
        <span className="c-time">{m.time}</span>
        <button className="c-hover-action" aria-label={`Reply to ${author.name} at ${m.time}`} onClick={() => onReply(m)}>
          ↩
        </button>
      </div>
      <div className="c-text" dangerouslySetInnerHTML={{ __html: m.html }} />
      {(m.reactions.length > 0 || m.replies > 0) && (
        <div className="c-meta">
          {m.reactions.map((r) => (
            <button key={r.emoji} className="c-reaction" aria-pressed={r.mine} onClick={() => onReact(m, r)}>
              {r.emoji} {r.count}
            </button>
          ))}
          {m.replies > 0 && (
            <span className="c-replies" onClick={() => onThread(m)}>
              {m.replies} {m.replies === 1 ? 'reply' : 'replies'}
            </span>
          )}
        </div>
      )}
    </div>
  );
}

function App({ data }) {
  const members = Object.fromEntries(data.members.map((p) => [p.id, p]));
  const [channel, setChannel] = useState(data.channels[0].name);
  const [messages, setMessages] = useState(data.messages);
  const [draft, setDraft] = useState('');
  const [status, setStatus] = useState('Last action: none');
  const listRef = useRef(null);
  const composer = useRef(null);
  const virtualizer = useVirtualizer({
    count: messages.length,
    getScrollElement: () => listRef.current,
    estimateSize: () => ROW,
    overscan: 2,
  });
  // A chat opens at its latest message, and follows new ones.
  useLayoutEffect(() => {
    virtualizer.scrollToIndex(messages.length - 1, { align: 'end' });
  }, [messages.length]);

  const mention = /(?:^|\s)@(\w*)$/.exec(draft);
  const matches = mention
    ? data.members.filter((p) => p.name.toLowerCase().startsWith(mention[1].toLowerCase()))
    : [];

  const setComposer = (text) => {
    composer.current.textContent = text;
    setDraft(text);
    // The caret goes to the end, as after typing.
    const range = document.createRange();
    range.selectNodeContents(composer.current);
    range.collapse(false);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  };
  const send = () => {
    const text = draft.replace(/\u00a0/g, ' ').trim();
    if (!text) return;
    record(`send:${text}`);
    const html = text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
    setMessages((ms) => [...ms, { id: `m${ms.length + 1}`, author: data.me, time: 'now', html, reactions: [], replies: 0 }]);
    setComposer('');
    setStatus(`Last action: sent to #${channel}`);
  };
  const pick = (p) => {
    record(`mention:${p.id}`);
    // A non-breaking space after the mention, as chat apps insert: a plain one at the end of the line would collapse,
    // and the next word would join the name.
    setComposer(draft.replace(/@(\w*)$/, `@${p.name}\u00a0`));
    composer.current.focus();
  };

  return (
    <div className="app chat">
      <aside className="c-sidebar">
        <div className="c-workspace">{data.workspace}</div>
        {data.channels.map((c) => (
          <div
            key={c.name}
            className={`c-channel${c.name === channel ? ' active' : ''}`}
            onClick={() => {
              record(`channel:${c.name}`);
              setChannel(c.name);
            }}
          >
            <span># {c.name}</span>
            {c.unread > 0 && <span className="c-badge">{c.unread}</span>}
          </div>
        ))}
      </aside>
      <main className="c-main">
        <header className="c-header">
          <h1># {channel}</h1>
          <p className="c-topic">
            Topic: ship the <a href="/docs/release-notes" onClick={(e) => { e.preventDefault(); record('topic'); }}>release notes</a> by <b>Friday</b>
          </p>
        </header>
        <p className="c-status" aria-live="polite">{status}</p>
        <div className="c-list" ref={listRef}>
          <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
            {virtualizer.getVirtualItems().map((v) => {
              const m = messages[v.index];
              return (
                <div key={m.id} className="c-row" style={{ transform: `translateY(${v.start}px)` }}>
                  <Message
                    m={m}
                    author={members[m.author]}
                    onAuthor={(id) => {
                      record(`profile:${id}`);
                      setStatus(`Last action: opened ${members[id].name}`);
                    }}
                    onReact={(msg, r) => {
                      record(`react:${msg.id}:${r.emoji}`);
                      setStatus(`Last action: reacted ${r.emoji}`);
                    }}
                    onThread={(msg) => {
                      record(`thread:${msg.id}`);
                      setStatus(`Last action: opened the thread of ${msg.id}`);
                    }}
                    onReply={(msg) => {
                      record(`reply:${msg.id}`);
                      setStatus(`Last action: replying to ${msg.id}`);
                    }}
                  />
                </div>
              );
            })}
          </div>
        </div>
        <div className="c-compose">
          {matches.length > 0 && (
            <ul className="c-mentions" role="listbox" aria-label="People">
              {matches.map((p) => (
                <li key={p.id} role="option" aria-selected="false" className="c-mention"
                  onMouseDown={(e) => e.preventDefault()} onClick={() => pick(p)}>
                  {p.name}
                </li>
              ))}
            </ul>
          )}
          <div
            ref={composer}
            className="c-input"
            contentEditable
            suppressContentEditableWarning
            role="textbox"
            aria-multiline="true"
            aria-label={`Message #${channel}`}
            data-placeholder={`Message #${channel}`}
            onInput={(e) => setDraft(e.currentTarget.textContent)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey) {
                e.preventDefault();
                send();
              }
            }}
          />
        </div>
      </main>
    </div>
  );
}

createRoot(document.getElementById('root')).render(<App data={pageData()} />);
