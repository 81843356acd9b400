// An invoicing app built with Mantine 9 (React 19), the way Mantine apps are: an AppShell whose header and sidebar
// are `position: fixed` landmarks, NavLinks whose open entry is marked only by `data-active` and whose disabled one
// only by `pointer-events: none` (and `data-disabled`), a Tooltip shown open (Floating UI makes it focusable,
// `tabindex="-1"`), an account Menu whose dropdown fades out (a 150 ms opacity transition) before it is removed, and a
// DatePickerInput: a `<button>` showing the date, named by its `<label for>`, and a MultiSelect whose input takes no
// pointer events (its box takes the clicks) and whose chosen values are pills with an `aria-hidden` remove `<button>`.
// "New invoice" opens a Modal: an `aria-modal` section over an overlay that closes it when clicked, the page behind
// neither inert nor hidden, and in it a Select whose list is drawn in a portal at the end of the body, outside it.
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import {
  MantineProvider, AppShell, NavLink, Tooltip, ActionIcon, Menu, Button, Title, Text, MultiSelect, Modal, Select,
} from '@mantine/core';
import { DatePickerInput } from '@mantine/dates';
import css from '@mantine/core/styles.css';
import datesCss from '@mantine/dates/styles.css';
import { record, pageData } from './record.js';

const data = pageData();

function App() {
  const [active, setActive] = useState(data.active);
  const [last, setLast] = useState('Last action: none');
  const [due, setDue] = useState(data.due);
  const [creating, setCreating] = useState(false);
  const [customer, setCustomer] = useState(null);
  const note = (event) => {
    record(event);
    setLast(`Last action: ${event}`);
  };
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 200, breakpoint: 0 }} padding="md">
      <AppShell.Header style={{ display: 'flex', alignItems: 'center', justifyContent: 'space-between', padding: '0 16px' }}>
        <Text fw={700}>{data.brand}</Text>
        <Tooltip label={data.tooltip} opened position="bottom">
          <ActionIcon variant="default" aria-label="Search" onClick={() => note('search')}>
            ⌕
          </ActionIcon>
        </Tooltip>
      </AppShell.Header>
      <AppShell.Navbar p="xs">
        {data.nav.map(([key, label, disabled]) => (
          <NavLink
            key={key}
            href={`#${key}`}
            label={label}
            active={key === active}
            disabled={disabled}
            onClick={(e) => {
              e.preventDefault();
              setActive(key);
              note(`nav:${key}`);
            }}
          />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>
        <Title order={1} size="h3">{data.title}</Title>
        <p>{last}</p>
        <DatePickerInput
          label="Due date"
          value={due}
          onChange={(d) => {
            setDue(d);
            note(`due:${d}`);
          }}
          style={{ maxWidth: 240, marginBottom: 12 }}
        />
        <MultiSelect
          label="Tags"
          data={data.tags}
          defaultValue={data.chosenTags}
          onChange={(v) => note(`tags:${v.join(',') || 'none'}`)}
          style={{ maxWidth: 320, marginBottom: 12 }}
        />
        <Button variant="filled" onClick={() => { setCreating(true); note('invoice:new'); }} style={{ marginRight: 12 }}>
          New invoice
        </Button>
        <Modal opened={creating} onClose={() => setCreating(false)} title="New invoice">
          <Select
            label="Customer"
            placeholder="Pick a customer"
            data={data.customers}
            value={customer}
            onChange={(c) => { setCustomer(c); note(`invoice:customer:${c}`); }}
            style={{ marginBottom: 12 }}
          />
          <Button onClick={() => { note(`invoice:create:${customer || 'none'}`); setCreating(false); }}>Create</Button>
        </Modal>
        <Menu transitionProps={{ transition: 'fade', duration: 150 }}>
          <Menu.Target>
            <Button variant="default">Account</Button>
          </Menu.Target>
          <Menu.Dropdown>
            {data.menu.map((item) => (
              <Menu.Item key={item} onClick={() => note(`menu:${item}`)}>
                {item}
              </Menu.Item>
            ))}
          </Menu.Dropdown>
        </Menu>
      </AppShell.Main>
    </AppShell>
  );
}

const style = document.createElement('style');
style.textContent = css + datesCss;
document.head.append(style);
createRoot(document.getElementById('root')).render(
  <MantineProvider>
    <App />
  </MantineProvider>,
);
