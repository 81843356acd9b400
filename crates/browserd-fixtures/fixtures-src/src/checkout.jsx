// A checkout form (React 19) built the way payment pages are: controlled inputs that format what is typed as the
// user types it (a card number in groups of four, an expiry as "MM / YY", a phone number as "(555) 123-4567"), a
// security code that keeps digits only, shipping options as radio cards (the radio itself hidden, the label styled),
// a delivery date (<input type=date>, controlled), a quantity stepper, inline validation messages tied to their fields,
// a Bootstrap-style switch (the <input role="switch"> before its <label for>), and a pay button that names the total.
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { record, pageData } from './record.js';

const digits = (s, n) => s.replace(/\D/g, '').slice(0, n);
const formats = {
  card: (s) => digits(s, 16).replace(/(\d{4})(?=\d)/g, '$1 '),
  expiry: (s) => {
    const d = digits(s, 4);
    return d.length > 2 ? `${d.slice(0, 2)} / ${d.slice(2)}` : d;
  },
  phone: (s) => {
    const d = digits(s, 10);
    if (d.length > 6) return `(${d.slice(0, 3)}) ${d.slice(3, 6)}-${d.slice(6)}`;
    if (d.length > 3) return `(${d.slice(0, 3)}) ${d.slice(3)}`;
    return d;
  },
  cvc: (s) => digits(s, 4),
  email: (s) => s,
  name: (s) => s,
};
const money = (cents) => `$${(cents / 100).toFixed(2)}`;

function Field({ id, label, value, error, onChange, ...rest }) {
  return (
    <div className="k-field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        value={value}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
        onChange={(e) => onChange(id, e.target.value)}
        {...rest}
      />
      {error && <p id={`${id}-error`} className="k-error">{error}</p>}
    </div>
  );
}

function App({ data }) {
  const [v, setV] = useState({ email: '', phone: '', name: '', card: '', expiry: '', cvc: '' });
  const [errors, setErrors] = useState({});
  const [ship, setShip] = useState(data.shipping[0].id);
  const [qty, setQty] = useState(1);
  const [date, setDate] = useState('');
  const [updates, setUpdates] = useState(false);
  const [done, setDone] = useState(null);
  const change = (id, raw) => setV((old) => ({ ...old, [id]: formats[id](raw) }));
  const shipping = data.shipping.find((s) => s.id === ship);
  const total = data.item.cents * qty + shipping.cents;

  const pay = (e) => {
    e.preventDefault();
    const errs = {};
    if (!/^\S+@\S+\.\S+$/.test(v.email)) errs.email = 'Enter a valid email address';
    if (v.card.replace(/\D/g, '').length !== 16) errs.card = 'Enter all 16 digits of the card number';
    if (!/^\d\d \/ \d\d$/.test(v.expiry)) errs.expiry = 'Enter the expiry as MM / YY';
    if (v.cvc.length < 3) errs.cvc = 'Enter the 3 or 4 digit security code';
    setErrors(errs);
    if (Object.keys(errs).length) {
      record(`invalid:${Object.keys(errs).join(',')}`);
      return;
    }
    record(`pay:${v.card}|${v.expiry}|${v.phone}|${ship}|${qty}`);
    setDone(`Order placed: ${qty} × ${data.item.name}, ${money(total)}`);
  };

  return (
    <div className="app checkout">
      <form className="k-form" onSubmit={pay} noValidate>
        <h1>Checkout</h1>
        <section aria-labelledby="k-contact">
          <h2 id="k-contact">Contact</h2>
          <Field id="email" label="Email" type="email" value={v.email} error={errors.email} onChange={change} />
          <Field id="phone" label="Phone (optional)" type="tel" value={v.phone} onChange={change} />
        </section>
        <section aria-labelledby="k-shipping">
          <h2 id="k-shipping">Shipping</h2>
          <div className="k-options">
            {data.shipping.map((s) => (
              <label key={s.id} className={`k-option${s.id === ship ? ' chosen' : ''}`}>
                <input type="radio" name="ship" value={s.id} checked={s.id === ship}
                  onChange={() => { record(`ship:${s.id}`); setShip(s.id); }} />
                <span className="k-option-name">{s.name}</span>
                <span className="k-option-price">{s.cents ? money(s.cents) : 'Free'}</span>
              </label>
            ))}
          </div>
          <div className="k-field">
            <label htmlFor="date">Delivery date</label>
            <input id="date" type="date" min="2026-01-01" value={date}
              onChange={(e) => { record(`date:${e.target.value}`); setDate(e.target.value); }} />
          </div>
          <div className="k-switch form-check form-switch">
            <input className="form-check-input" type="checkbox" role="switch" id="updates" checked={updates}
              onChange={(e) => { record(`updates:${e.target.checked ? 'on' : 'off'}`); setUpdates(e.target.checked); }} />
            <label className="form-check-label" htmlFor="updates">Email me order updates</label>
          </div>
        </section>
        <section aria-labelledby="k-payment">
          <h2 id="k-payment">Payment</h2>
          <Field id="name" label="Name on card" value={v.name} onChange={change} autoComplete="cc-name" />
          <Field id="card" label="Card number" inputMode="numeric" placeholder="1234 1234 1234 1234" value={v.card}
            error={errors.card} onChange={change} autoComplete="cc-number" />
          <div className="k-row">
            <Field id="expiry" label="Expiry" placeholder="MM / YY" value={v.expiry} error={errors.expiry}
              onChange={change} autoComplete="cc-exp" />
            <Field id="cvc" label="Security code" inputMode="numeric" maxLength={4} value={v.cvc}
              error={errors.cvc} onChange={change} autoComplete="cc-csc" />
          </div>
        </section>
        <button className="k-pay" type="submit">Pay {money(total)}</button>
        <p className="k-status" role="status">{done || 'Not paid yet'}</p>
      </form>
      <aside className="k-summary" aria-label="Order summary">
        <p className="k-item">{data.item.name}</p>
        <div className="k-stepper">
          <button type="button" aria-label="Fewer" onClick={() => { record('qty:-'); setQty((q) => Math.max(1, q - 1)); }}>−</button>
          <span aria-live="polite">{qty}</span>
          <button type="button" aria-label="More" onClick={() => { record('qty:+'); setQty((q) => q + 1); }}>+</button>
        </div>
        <p>Shipping: {shipping.cents ? money(shipping.cents) : 'Free'}</p>
        <p className="k-total">Total: <b>{money(total)}</b></p>
      </aside>
    </div>
  );
}

createRoot(document.getElementById('root')).render(<App data={pageData()} />);
