// The dashboard app (React production build): metric cards that are clickable <div>s, custom tabs made of
// <div>s, and an instruction sentence with inline <span> emphasis above the field it talks about.
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { flushSync } from 'react-dom';
import { record, pageData } from './record.js';

function App({ data }) {
  const [tab, setTab] = useState(data.tabs[0]);
  const [card, setCard] = useState(null);
  const [name, setName] = useState('');
  const [checked, setChecked] = useState(null);
  return (
    <div className="app dashboard">
      <div className="tabs">
        {data.tabs.map((t) => (
          <div
            key={t}
            className={t === tab ? 'tab active' : 'tab'}
            onClick={() => {
              setTab(t);
              record(`tab:${t}`);
            }}
          >
            {t}
          </div>
        ))}
      </div>
      <h1>{tab}</h1>
      <div className="cards">
        {data.cards.map((c) => (
          <div
            key={c.title}
            className="card"
            onClick={() => {
              setCard(c.title);
              record(`card:${c.title}`);
            }}
          >
            <div className="card-title">{c.title}</div>
            <div className="card-value">{c.value}</div>
          </div>
        ))}
      </div>
      <p className="muted">{card ? `Selected card: ${card}` : 'Selected card: none'}</p>
      <section className="task">
        <p className="instruction">
          Enter "<span className="em">{data.expectedName}</span>" into the field
        </p>
        <input placeholder="Name" value={name} onChange={(e) => setName(e.target.value)} />
        <button
          type="button"
          onClick={() => {
            setChecked(name === data.expectedName ? 'correct' : 'wrong');
            record(`check:${name}`);
          }}
        >
          Check
        </button>
        <span className="muted">{checked ? `Result: ${checked}` : 'Result: none'}</span>
      </section>
    </div>
  );
}

const root = createRoot(document.getElementById('root'));
flushSync(() => root.render(<App data={pageData()} />));
