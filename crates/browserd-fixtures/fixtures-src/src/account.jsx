// Account settings built from Radix UI primitives (React 19), the way shadcn/ui apps are: a user menu
// (DropdownMenu: opens on pointerdown, items are role="menuitem" divs in a portal, and while it is open the rest of
// the page takes no pointer events), Tabs whose triggers activate on mousedown, a Select whose listbox renders in a
// portal and picks on pointerup, a Switch (a <button role="switch">), an Accordion, and a Dialog in a portal that hides
// everything else from the accessibility tree. The profile also has a theme picker drawn as Tailwind and Bootstrap
// draw segmented controls (visually hidden radios, each followed by the <label for> a user clicks) and a checkbox
// drawn as MUI's FormControlLabel draws one (<label><span><input></span><span>text</span></label>); the
// notifications panel holds only text (Radix gives every panel tabindex=0 and names it by its tab).
import { Fragment, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { flushSync } from 'react-dom';
import * as DropdownMenu from '@radix-ui/react-dropdown-menu';
import * as Tabs from '@radix-ui/react-tabs';
import * as Select from '@radix-ui/react-select';
import * as Switch from '@radix-ui/react-switch';
import * as Accordion from '@radix-ui/react-accordion';
import * as Dialog from '@radix-ui/react-dialog';
import { record, pageData } from './record.js';

function App({ data }) {
  const [lang, setLang] = useState(data.languages[0].value);
  const [pub, setPub] = useState(false);
  const [theme, setTheme] = useState(data.themes[0]);
  const [summary, setSummary] = useState(false);
  const [status, setStatus] = useState('Nothing saved yet');
  const language = data.languages.find((l) => l.value === lang);
  return (
    <div className="app account">
      <header className="a-header">
        <strong className="a-brand">{data.product}</strong>
        <DropdownMenu.Root onOpenChange={(open) => open && record('menu:open')}>
          <DropdownMenu.Trigger className="a-user">{data.user} ▾</DropdownMenu.Trigger>
          <DropdownMenu.Portal>
            <DropdownMenu.Content className="a-menu" sideOffset={4} align="end">
              {data.menu.map((item) => (
                <DropdownMenu.Item key={item} className="a-menu-item" onSelect={() => record(`menu:${item}`)}>
                  {item}
                </DropdownMenu.Item>
              ))}
            </DropdownMenu.Content>
          </DropdownMenu.Portal>
        </DropdownMenu.Root>
      </header>
      <main className="a-main">
        <h1>Account settings</h1>
        <p className="a-status" aria-live="polite">{status}</p>
        <Tabs.Root defaultValue={data.tabs[0]} className="a-tabs">
          {/* Recorded where Radix activates a tab, on mousedown: the shorter panel it shows may scroll the page
              under the pointer before the mouseup, and then no click follows (for a user either). */}
          <Tabs.List aria-label="Settings sections" className="a-tablist">
            {data.tabs.map((t) => (
              <Tabs.Trigger key={t} value={t} className="a-tab" onMouseDown={() => record(`tab:${t}`)}>{t}</Tabs.Trigger>
            ))}
          </Tabs.List>
          <Tabs.Content value={data.tabs[0]} className="a-panel">
            <label className="a-field">
              <span>Display name</span>
              <input defaultValue={data.user} />
            </label>
            <div className="a-field">
              <span id="lang-label">Language</span>
              <Select.Root value={lang} onValueChange={(v) => { setLang(v); record(`lang:${v}`); }}>
                <Select.Trigger className="a-select" aria-labelledby="lang-label">
                  <Select.Value>{language.label}</Select.Value>
                  <Select.Icon> ▾</Select.Icon>
                </Select.Trigger>
                <Select.Portal>
                  <Select.Content className="a-select-content" position="popper" sideOffset={4}>
                    <Select.Viewport>
                      {data.languages.map((l) => (
                        <Select.Item key={l.value} value={l.value} className="a-option">
                          <Select.ItemText>{l.label}</Select.ItemText>
                        </Select.Item>
                      ))}
                    </Select.Viewport>
                  </Select.Content>
                </Select.Portal>
              </Select.Root>
            </div>
            <div className="a-field">
              <label htmlFor="public">Public profile</label>
              <Switch.Root id="public" className="a-switch" checked={pub}
                onCheckedChange={(on) => { setPub(on); record(`public:${on ? 'on' : 'off'}`); }}>
                <Switch.Thumb className="a-thumb" />
              </Switch.Root>
            </div>
            <div className="a-field">
              <span id="theme-label">Theme</span>
              <div className="a-segments" role="group" aria-labelledby="theme-label">
                {data.themes.map((t) => (
                  <Fragment key={t}>
                    <input type="radio" name="theme" id={`theme-${t}`} className="sr-only" checked={theme === t}
                      onChange={() => { setTheme(t); record(`theme:${t}`); }} />
                    <label htmlFor={`theme-${t}`} className="a-segment">{t}</label>
                  </Fragment>
                ))}
              </div>
            </div>
            <label className="a-check-label">
              <span className="a-check">
                <input type="checkbox" checked={summary}
                  onChange={(e) => { setSummary(e.target.checked); record(`summary:${e.target.checked ? 'on' : 'off'}`); }} />
                <svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M5 12l5 5L20 7" /></svg>
              </span>
              <span className="a-check-text">Email me a weekly summary</span>
            </label>
            <button type="button" className="a-save" onClick={() => { setStatus(`Saved: ${language.label}, ${pub ? 'public' : 'private'}`); record('save'); }}>
              Save changes
            </button>
          </Tabs.Content>
          <Tabs.Content value={data.tabs[1]} className="a-panel">
            <p>Email me about <em>security alerts</em> and <em>billing</em>.</p>
          </Tabs.Content>
          <Tabs.Content value={data.tabs[2]} className="a-panel">
            <p>Deleting your account removes every project.</p>
            <Dialog.Root onOpenChange={(open) => record(open ? 'delete:ask' : 'delete:close')}>
              <Dialog.Trigger className="a-danger">Delete account</Dialog.Trigger>
              <Dialog.Portal>
                <Dialog.Overlay className="a-overlay" />
                <Dialog.Content className="a-dialog">
                  <Dialog.Title>Delete your account?</Dialog.Title>
                  <Dialog.Description>This removes {data.projects} projects and cannot be undone.</Dialog.Description>
                  <Dialog.Close className="a-cancel">Cancel</Dialog.Close>
                  <button type="button" className="a-danger" onClick={() => record('delete:confirm')}>Yes, delete</button>
                </Dialog.Content>
              </Dialog.Portal>
            </Dialog.Root>
          </Tabs.Content>
        </Tabs.Root>
        <h2>Questions</h2>
        <Accordion.Root type="single" collapsible className="a-faq">
          {data.faq.map((f) => (
            <Accordion.Item key={f.id} value={f.id}>
              <Accordion.Header>
                <Accordion.Trigger className="a-faq-q" onClick={() => record(`faq:${f.id}`)}>{f.q}</Accordion.Trigger>
              </Accordion.Header>
              <Accordion.Content className="a-faq-a">{f.a}</Accordion.Content>
            </Accordion.Item>
          ))}
        </Accordion.Root>
      </main>
    </div>
  );
}

const root = createRoot(document.getElementById('root'));
flushSync(() => root.render(<App data={pageData()} />));
