// The shop app (React production build): product cards that open on a click anywhere on the card and hold an
// "Add to cart" button of their own, a search combobox whose suggestions are <div>s rendered in a portal at the end
// of <body>, a long product name beside its price chip, a quantity field labelled by a sibling <div>
// (aria-labelledby, no <label>), icon buttons whose only name is an <svg><title>, a sticky footer of adjacent status
// spans, and a checkout modal (aria-modal, portal) that makes the rest of the page inert.
// Two cards show a sale: the price before struck through, one as <s>, one as a span the stylesheet strikes.
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { createPortal, flushSync } from 'react-dom';
import { record, pageData } from './record.js';

function Icon({ title, d }) {
  return (
    <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden={title ? undefined : 'true'}>
      {title ? <title>{title}</title> : null}
      <path d={d} fill="currentColor" />
    </svg>
  );
}

const TRASH = 'M6 7h12l-1 13H7L6 7zm3-3h6l1 2H8l1-2z';
const HEART = 'M12 21s-7-4.5-9.5-9A5 5 0 0 1 12 6a5 5 0 0 1 9.5 6C19 16.5 12 21 12 21z';

function Search({ products, onPick }) {
  const [query, setQuery] = useState('');
  const [open, setOpen] = useState(false);
  const [rect, setRect] = useState(null);
  const matches = query ? products.filter((p) => p.name.toLowerCase().includes(query.toLowerCase())) : [];
  return (
    <div className="search">
      <input
        role="combobox"
        aria-expanded={open && matches.length > 0}
        aria-controls="search-suggestions"
        aria-autocomplete="list"
        placeholder="Search products"
        value={query}
        onChange={(e) => {
          setQuery(e.target.value);
          setOpen(true);
          setRect(e.target.getBoundingClientRect());
        }}
        onBlur={() => setOpen(false)}
      />
      {open && matches.length > 0 && rect
        ? createPortal(
            <div
              id="search-suggestions"
              className="suggestions"
              style={{ top: rect.bottom + window.scrollY + 2, left: rect.left + window.scrollX, width: rect.width }}
            >
              {matches.map((p) => (
                <div
                  key={p.id}
                  className="suggestion"
                  onMouseDown={(e) => {
                    e.preventDefault();
                    setQuery(p.name);
                    setOpen(false);
                    onPick(p);
                  }}
                >
                  {p.name}
                </div>
              ))}
            </div>,
            document.body,
          )
        : null}
    </div>
  );
}

function App({ data }) {
  const [cart, setCart] = useState([]);
  const [viewed, setViewed] = useState(null);
  const [qty, setQty] = useState('1');
  const [checkout, setCheckout] = useState(false);
  const [liked, setLiked] = useState({});
  const total = cart.reduce((sum, id) => sum + data.products.find((p) => p.id === id).cents, 0);
  const money = (cents) => `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2 })}`;

  return (
    <>
      <div className="app shop" inert={checkout ? true : undefined}>
        <main>
          <header className="toolbar">
            <h1>Shop</h1>
            <Search
              products={data.products}
              onPick={(p) => {
                setViewed(p.name);
                record(`search:${p.id}`);
              }}
            />
            <button
              type="button"
              onClick={() => {
                setCheckout(true);
                record('checkout:open');
              }}
            >
              Checkout
            </button>
          </header>
          <p className="muted">{viewed ? `Viewing: ${viewed}` : 'Viewing: none'}</p>
          <div className="products">
            {data.products.map((p) => (
              <div
                key={p.id}
                className="product-card"
                onClick={() => {
                  setViewed(p.name);
                  record(`view:${p.id}`);
                }}
              >
                <div className="product-name">{p.name}</div>
                {p.was && p.wasTag && <s className="was">{money(p.was)}</s>}
                {p.was && !p.wasTag && <span className="compare-at">{money(p.was)}</span>}
                {p.was && ' '}
                <span className="price">{money(p.cents)}</span>
                <div className="card-actions">
                  <button
                    type="button"
                    onClick={(e) => {
                      e.stopPropagation();
                      setCart((c) => [...c, p.id]);
                      record(`add:${p.id}`);
                    }}
                  >
                    Add to cart
                  </button>
                  <button
                    type="button"
                    className="icon-button"
                    onClick={(e) => {
                      e.stopPropagation();
                      setLiked((l) => ({ ...l, [p.id]: !l[p.id] }));
                      record(`like:${p.id}`);
                    }}
                  >
                    <Icon title={`Save ${p.short} for later`} d={HEART} />
                  </button>
                </div>
              </div>
            ))}
          </div>
          <section className="cart">
            <h2>Cart</h2>
            <div className="field">
              <div id="qty-label" className="field-label">
                Quantity per item
              </div>
              <input
                aria-labelledby="qty-label"
                inputMode="numeric"
                value={qty}
                onChange={(e) => setQty(e.target.value)}
              />
            </div>
            <ul className="cart-lines">
              {cart.length === 0 ? <li className="muted">Your cart is empty</li> : null}
              {cart.map((id, i) => {
                const p = data.products.find((x) => x.id === id);
                return (
                  <li key={`${id}-${i}`} className="cart-line">
                    <span>{p.short}</span>
                    <button
                      type="button"
                      className="icon-button"
                      onClick={() => {
                        setCart((c) => c.filter((_, j) => j !== i));
                        record(`remove:${id}`);
                      }}
                    >
                      <Icon title={`Remove ${p.short}`} d={TRASH} />
                    </button>
                  </li>
                );
              })}
            </ul>
          </section>
        </main>
        <footer className="sticky-footer">
          <span className="stat">{`${cart.length} items`}</span>
          <span className="stat">{`Total: ${money(total)}`}</span>
          <span className="stat">{data.shipping}</span>
        </footer>
      </div>
      {checkout
        ? createPortal(
            <div className="modal" role="dialog" aria-modal="true" aria-labelledby="checkout-title">
              <h2 id="checkout-title">Confirm your order</h2>
              <p>{`${cart.length} items, ${money(total)}`}</p>
              <button
                type="button"
                onClick={() => {
                  setCheckout(false);
                  record('checkout:cancel');
                }}
              >
                Back to shop
              </button>
              <button
                type="button"
                className="primary"
                onClick={() => {
                  setCheckout(false);
                  record('checkout:pay');
                }}
              >
                Pay now
              </button>
            </div>,
            document.body,
          )
        : null}
    </>
  );
}

const root = createRoot(document.getElementById('root'));
flushSync(() => root.render(<App data={pageData()} />));
