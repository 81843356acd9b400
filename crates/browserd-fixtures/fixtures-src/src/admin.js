// The admin settings app (Vue production build, render functions): a tab bar of <div>s whose clicks one @click on
// the bar handles (event.target.closest), a breadcrumb of pointer <span>s handled the same way, an "Actions" menu
// that renders into a <Teleport to="body"> fixed-position panel, toggle switches built from
// <label><input type=checkbox hidden><span class=slider> (one with a transparent 0×0 checkbox instead), tag chips
// whose "×" is an <i> icon with its own handler, section titles in `text-transform: uppercase` with an icon-font
// `::before` glyph, a `display: contents` wrapper, a <br> inside a link, an aria-disabled <div> button, and a table
// whose rows are clickable through @click on each <tr>.
import { createApp, h, reactive, Teleport, onMounted, onBeforeUnmount } from 'vue';
import { record, pageData } from './record.js';

const data = pageData();
const state = reactive({
  tab: data.tabs[0],
  crumb: null,
  menu: false,
  toggles: Object.fromEntries(data.toggles.map((t) => [t.id, t.on])),
  tags: [...data.tags],
  member: null,
  last: null,
});

function act(event, label) {
  state.last = label;
  record(event);
}

function tabBar() {
  return h(
    'div',
    {
      class: 'tabbar',
      onClick: (event) => {
        const tab = event.target.closest('.tabbar-item');
        if (!tab) return;
        state.tab = tab.dataset.tab;
        act(`tab:${tab.dataset.tab}`, `tab ${tab.dataset.tab}`);
      },
    },
    data.tabs.map((t) => h('div', { key: t, class: ['tabbar-item', t === state.tab && 'active'], 'data-tab': t }, t)),
  );
}

function breadcrumb() {
  return h(
    'div',
    {
      class: 'crumbs',
      onClick: (event) => {
        const crumb = event.target.closest('.crumb');
        if (!crumb) return;
        state.crumb = crumb.textContent;
        act(`crumb:${crumb.textContent}`, `crumb ${crumb.textContent}`);
      },
    },
    data.crumbs.flatMap((c, i) => [
      i > 0 ? h('span', { class: 'crumb-sep' }, '/') : null,
      h('span', { class: 'crumb' }, c),
    ]),
  );
}

const ActionsMenu = {
  setup() {
    const close = (event) => {
      if (!event.target.closest('.menu-trigger, .menu-panel')) state.menu = false;
    };
    onMounted(() => document.addEventListener('mousedown', close));
    onBeforeUnmount(() => document.removeEventListener('mousedown', close));
    return () =>
      h('div', { class: 'menu-wrap' }, [
        h(
          'div',
          {
            class: 'menu-trigger',
            onClick: () => {
              state.menu = !state.menu;
              act('menu:toggle', 'menu');
            },
          },
          'Actions',
        ),
        h(Teleport, { to: 'body' }, [
          state.menu
            ? h(
                'div',
                { class: 'menu-panel' },
                data.actions.map((a) =>
                  h(
                    'div',
                    {
                      key: a,
                      class: 'menu-item',
                      onClick: () => {
                        state.menu = false;
                        act(`action:${a}`, `action ${a}`);
                      },
                    },
                    a,
                  ),
                ),
              )
            : null,
        ]),
      ]);
  },
};

function toggle(t) {
  return h('div', { class: 'setting' }, [
    h('label', { class: 'switch' }, [
      // Most switches hide their checkbox (`hidden`); some keep it rendered but transparent and 0×0.
      h('input', {
        type: 'checkbox',
        hidden: !t.transparent,
        class: t.transparent ? 'switch-input' : undefined,
        checked: state.toggles[t.id],
        onChange: (event) => {
          state.toggles[t.id] = event.target.checked;
          act(`toggle:${t.id}:${event.target.checked ? 'on' : 'off'}`, `${t.label} ${event.target.checked ? 'on' : 'off'}`);
        },
      }),
      h('span', { class: 'slider' }),
      h('span', { class: 'switch-label' }, t.label),
    ]),
  ]);
}

function chips() {
  return h(
    'div',
    { class: 'tags' },
    state.tags.map((tag) =>
      h('span', { key: tag, class: 'tag' }, [
        tag,
        h(
          'i',
          {
            class: 'tag-x',
            onClick: () => {
              state.tags = state.tags.filter((t) => t !== tag);
              act(`untag:${tag}`, `removed ${tag}`);
            },
          },
          data.removeIcon,
        ),
      ]),
    ),
  );
}

function members() {
  return h('table', { class: 'grid members' }, [
    h('thead', [h('tr', data.columns.map((c) => h('th', c)))]),
    h(
      'tbody',
      data.members.map((m) =>
        h(
          'tr',
          {
            key: m.email,
            class: state.member === m.email ? 'member selected' : 'member',
            onClick: () => {
              state.member = m.email;
              act(`member:${m.email}`, `member ${m.name}`);
            },
          },
          [h('td', m.name), h('td', m.email), h('td', [h('span', { class: 'role-pill' }, m.role)])],
        ),
      ),
    ),
  ]);
}

const App = {
  render() {
    return h('div', { class: 'app admin' }, [
      h('main', [
        breadcrumb(),
        h('div', { class: 'toolbar' }, [h('h1', 'Workspace settings'), h(ActionsMenu)]),
        tabBar(),
        h('p', { class: 'muted status-line' }, state.last ? `Last action: ${state.last}` : 'Last action: none'),
        h('h2', { class: 'section-title icon-bell' }, 'Notifications'),
        h('div', { class: 'settings-list' }, data.toggles.map(toggle)),
        h('h2', { class: 'section-title icon-tag' }, 'Tags'),
        chips(),
        h('h2', { class: 'section-title icon-users' }, 'Members'),
        members(),
        h('div', { class: 'plan' }, [
          h('div', { style: 'display: contents' }, [
            h('span', { class: 'plan-label' }, 'Plan:'),
            ' ',
            h('span', { class: 'plan-name' }, data.plan),
          ]),
        ]),
        h('p', { class: 'help' }, [
          h('a', { href: '#help', onClick: () => act('help', 'help') }, ['Help center', h('br'), 'and docs']),
        ]),
        h('div', { class: 'danger-zone' }, [
          h('div', { class: 'btn btn-disabled', role: 'button', 'aria-disabled': 'true' }, 'Delete workspace'),
          h('span', { class: 'muted' }, 'Only the owner can delete this workspace.'),
        ]),
      ]),
    ]);
  },
};

createApp(App).mount('#root');
