// The settings console (Lit web components, open shadow roots): an <app-nav> whose items are <a>s without href in
// its shadow root, their clicks handled by one @click on the host through event.composedPath(); <toggle-switch>
// hosts that are the switch themselves (role="switch", aria-checked, tabindex) with their label slotted from the
// light DOM; a <data-table> whose clickable rows live in its shadow root, itself inside a <member-panel>'s shadow
// root (two shadow roots deep inside the console's own); an <app-card> with a named title slot and a default slot
// holding a light-DOM button, and a sentence split across the shadow/light boundary with inline emphasis
// (`Type "<b>admin</b>" to confirm`); an <icon-button> named only by the aria-label on its host.
import { LitElement, html, css } from 'lit';
import { record, pageData } from './record.js';

const data = pageData();

class AppNav extends LitElement {
  static properties = { items: { type: Array }, current: { type: String } };
  static styles = css`
    nav { display: flex; gap: 4px; border-bottom: 1px solid #dde1e7; }
    a { padding: 6px 12px; cursor: pointer; color: #1d4ed8; }
    a.current { border-bottom: 2px solid #1d4ed8; }
  `;
  render() {
    return html`<nav>${this.items.map(
      (item) => html`<a class=${item === this.current ? 'nav-item current' : 'nav-item'} data-item=${item}>${item}</a>`,
    )}</nav>`;
  }
}
customElements.define('app-nav', AppNav);

class ToggleSwitch extends LitElement {
  static properties = { checked: { type: Boolean, reflect: true } };
  static styles = css`
    :host { display: flex; align-items: center; gap: 8px; padding: 4px 0; cursor: pointer; }
    .track { width: 32px; height: 18px; border-radius: 9px; background: #b8c0cc; position: relative; }
    :host([checked]) .track { background: #1d4ed8; }
    .thumb { position: absolute; top: 2px; left: 2px; width: 14px; height: 14px; border-radius: 7px; background: #fff; }
    :host([checked]) .thumb { left: 16px; }
  `;
  constructor() {
    super();
    this.checked = false;
    this.addEventListener('click', () => this.flip());
    this.addEventListener('keydown', (event) => {
      if (event.key === ' ' || event.key === 'Enter') {
        event.preventDefault();
        this.flip();
      }
    });
  }
  connectedCallback() {
    super.connectedCallback();
    this.setAttribute('role', 'switch');
    if (!this.hasAttribute('tabindex')) this.setAttribute('tabindex', '0');
  }
  updated() {
    this.setAttribute('aria-checked', String(this.checked));
  }
  flip() {
    this.checked = !this.checked;
    this.dispatchEvent(new CustomEvent('change', { detail: this.checked, bubbles: true, composed: true }));
  }
  render() {
    return html`<span class="track"><span class="thumb"></span></span><slot></slot>`;
  }
}
customElements.define('toggle-switch', ToggleSwitch);

class DataTable extends LitElement {
  static properties = { columns: { type: Array }, rows: { type: Array }, selected: { type: String } };
  static styles = css`
    table { border-collapse: collapse; width: 100%; background: #fff; }
    th, td { text-align: left; padding: 6px 10px; border-top: 1px solid #eef0f3; }
    tbody tr { cursor: pointer; }
    tr.selected { background: #e8eefc; }
  `;
  render() {
    return html`<table>
      <thead><tr>${this.columns.map((c) => html`<th>${c}</th>`)}</tr></thead>
      <tbody>${this.rows.map(
        (row) => html`<tr class=${row.email === this.selected ? 'selected' : ''}
            @click=${() => this.dispatchEvent(new CustomEvent('row-click', { detail: row, bubbles: true, composed: true }))}>
          <td>${row.name}</td><td>${row.email}</td><td>${row.role}</td></tr>`,
      )}</tbody>
    </table>`;
  }
}
customElements.define('data-table', DataTable);

class MemberPanel extends LitElement {
  static properties = { selected: { type: String } };
  static styles = css`:host { display: block; margin: 12px 0; } h2 { font-size: 15px; }`;
  render() {
    return html`<h2>Members</h2>
      <data-table .columns=${data.columns} .rows=${data.members} .selected=${this.selected}></data-table>`;
  }
}
customElements.define('member-panel', MemberPanel);

class AppCard extends LitElement {
  static styles = css`
    :host { display: block; margin: 12px 0; padding: 12px; background: #fff; border: 1px solid #dde1e7; border-radius: 6px; }
    h2 { font-size: 15px; margin: 0 0 8px; }
    p { margin: 0 0 8px; }
  `;
  render() {
    return html`<h2><slot name="title"></slot></h2>
      <p class="hint">Type "<slot name="word"></slot>" to confirm</p>
      <slot></slot>`;
  }
}
customElements.define('app-card', AppCard);

class IconButton extends LitElement {
  static styles = css`
    button { width: 28px; height: 28px; padding: 4px; border: 1px solid #b8c0cc; border-radius: 4px; background: #fff; cursor: pointer; }
    svg { width: 18px; height: 18px; }
  `;
  render() {
    return html`<button><svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2">
      <path d="M20 11a8 8 0 1 0-2.3 5.7M20 4v7h-7"></path></svg></button>`;
  }
}
customElements.define('icon-button', IconButton);

class SettingsConsole extends LitElement {
  static properties = { page: { state: true }, last: { state: true }, member: { state: true }, toggles: { state: true } };
  static styles = css`
    :host { display: block; padding: 12px 20px; }
    .toolbar { display: flex; gap: 12px; align-items: center; }
    h1 { font-size: 18px; margin: 0; }
    .status { color: #687286; }
    input { font: inherit; padding: 4px 6px; }
  `;
  constructor() {
    super();
    this.page = data.nav[0];
    this.last = null;
    this.member = null;
    this.toggles = Object.fromEntries(data.toggles.map((t) => [t.id, t.on]));
  }
  act(event, label) {
    this.last = label;
    record(event);
  }
  onNav(event) {
    const item = event.composedPath().find((n) => n.classList && n.classList.contains('nav-item'));
    if (!item) return;
    this.page = item.dataset.item;
    this.act(`nav:${item.dataset.item}`, `page ${item.dataset.item}`);
  }
  render() {
    return html`
      <div class="toolbar">
        <h1>Settings console</h1>
        <icon-button aria-label=${data.refreshLabel} @click=${() => this.act('members:reload', 'members reloaded')}></icon-button>
      </div>
      <app-nav .items=${data.nav} .current=${this.page} @click=${this.onNav}></app-nav>
      <p class="status">${this.last ? `Last action: ${this.last}` : 'Last action: none'}</p>
      ${data.toggles.map(
        (t) => html`<toggle-switch ?checked=${this.toggles[t.id]}
            @change=${(event) => {
              this.toggles = { ...this.toggles, [t.id]: event.detail };
              this.act(`toggle:${t.id}:${event.detail ? 'on' : 'off'}`, `${t.label} ${event.detail ? 'on' : 'off'}`);
            }}>${t.label}</toggle-switch>`,
      )}
      <member-panel .selected=${this.member}
        @row-click=${(event) => {
          this.member = event.detail.email;
          this.act(`member:${event.detail.email}`, `member ${event.detail.name}`);
        }}></member-panel>
      <app-card>
        <span slot="title">${data.danger.title}</span>
        <b slot="word">${data.danger.word}</b>
        <button @click=${() => this.act('danger:reset', 'reset asked')}>${data.danger.button}</button>
      </app-card>
    `;
  }
}
customElements.define('settings-console', SettingsConsole);

document.getElementById('root').append(document.createElement('settings-console'));
