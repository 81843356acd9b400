// The mail app (Vue production build, render functions): a folder tree of nested lists whose rows toggle their
// children, a mail list of clickable <div> rows (Vue's own per-element handlers), and a HUD of adjacent status
// <div>s (storage with its bar), and the opened mail's HTML body (layout tables, a struck figure, a preformatted
// diffstat, a chart image) under a toolbar of unlabelled Lucide icon buttons; the bin asks in a native modal <dialog>.
// The labels are plain <li>s whose clicks one Vue listener on their <ul> handles (it finds the item clicked).
import { createApp, h, reactive } from 'vue';
import { Archive, Trash2 } from 'lucide-vue-next';
import { record, pageData } from './record.js';

const data = pageData();
const state = reactive({
  open: Object.fromEntries(data.folders.flatMap(allFolders).map((f) => [f.name, !!f.open])),
  folder: data.folders[0].name,
  read: {},
  opened: null,
  body: null,
  openedId: null,
});

function allFolders(folder) {
  return [folder, ...(folder.children || []).flatMap(allFolders)];
}

function folderItem(folder) {
  const hasChildren = (folder.children || []).length > 0;
  const open = state.open[folder.name];
  const rowClass = ['folder-row', hasChildren ? (open ? 'expanded' : 'collapsed') : 'leaf'];
  if (state.folder === folder.name) rowClass.push('active');
  return h('li', { key: folder.name }, [
    h(
      'div',
      {
        class: rowClass,
        onClick: () => {
          if (hasChildren) state.open[folder.name] = !open;
          state.folder = folder.name;
          record(`folder:${folder.name}`);
        },
      },
      folder.name,
    ),
    hasChildren && open ? h('ul', { class: 'tree' }, folder.children.map(folderItem)) : null,
  ]);
}

const App = {
  render() {
    const unread = data.mails.filter((m) => !state.read[m.id]).length;
    return h('div', { class: 'app mail' }, [
      h('aside', { class: 'folders' }, [
        h('ul', { class: 'tree' }, data.folders.map(folderItem)),
        h('h4', 'Labels'),
        h(
          'ul',
          {
            class: 'labels',
            onClick: (e) => {
              const item = e.target.closest('li');
              if (item) record(`label:${item.textContent}`);
            },
          },
          data.labels.map((l) => h('li', { key: l }, l)),
        ),
      ]),
      h('main', [
        h('div', { class: 'hud' }, [
          h('div', `Folder: ${state.folder}`),
          h('div', `Unread: ${unread}`),
          h('div', `Flagged: ${data.flagged}`),
          h('div', [
            `Storage: ${data.storage}`,
            h('div', {
              class: 'meter',
              role: 'progressbar',
              'aria-label': 'Storage used',
              'aria-valuenow': data.storageUsed,
              'aria-valuemin': 0,
              'aria-valuemax': 100,
            }, [h('div', { class: 'meter-fill', style: { width: `${data.storageUsed}%` } })]),
          ]),
          h('div', state.opened ? `Open: ${state.opened}` : 'Open: none'),
        ]),
        h(
          'div',
          { class: 'mail-list' },
          data.mails.map((m) =>
            h(
              'div',
              {
                key: m.id,
                class: state.read[m.id] ? 'mail-row' : 'mail-row unread',
                onClick: () => {
                  state.read[m.id] = true;
                  state.opened = m.subject;
                  state.body = m.html || null;
                  state.openedId = m.id;
                  record(`mail:${m.id}`);
                },
              },
              [h('span', { class: 'from' }, m.from), h('span', { class: 'subject' }, m.subject), h('span', { class: 'date' }, m.date)],
            ),
          ),
        ),
        // The opened mail's HTML body, inserted as mail clients do (the message's own markup, its layout tables).
        // Its toolbar: icon buttons (Lucide's Vue icons) with no label, as many mail clients ship them.
        state.body
          ? h('article', { class: 'mail-body' }, [
              h('div', { class: 'mail-tools' }, [
                h('button', { type: 'button', class: 'tool', onClick: () => record(`archive:${state.openedId}`) }, [
                  h(Archive, { size: 16 }),
                ]),
                h('button', {
                  type: 'button',
                  class: 'tool',
                  onClick: () => document.getElementById('confirm-delete').showModal(),
                }, [h(Trash2, { size: 16 })]),
              ]),
              h('div', { innerHTML: state.body }),
            ])
          : null,
        // The bin asks first, in a native modal <dialog> (the page behind it is inert).
        h('dialog', { id: 'confirm-delete', class: 'confirm' }, [
          h('p', 'Delete this conversation?'),
          h('button', {
            type: 'button',
            onClick: () => {
              record(`delete:${state.openedId}`);
              state.body = null;
              state.opened = null;
              document.getElementById('confirm-delete').close();
            },
          }, 'Delete'),
          h('button', { type: 'button', onClick: () => document.getElementById('confirm-delete').close() }, 'Cancel'),
        ]),
      ]),
    ]);
  },
};

createApp(App).mount('#root');
