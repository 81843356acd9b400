// A people admin built with Element Plus 2 (Vue 3, render functions), the way Element Plus apps are: a side menu whose
// open entry is marked only by its `is-active` class, a Select whose combobox input is invisible behind its
// placeholder (the wrapper around both takes the clicks), a Switch whose form label points at its 0×0 input while its
// click handler sits on the drawn switch (`@click.prevent`), a Rate drawn as a slider of star icons, radio buttons
// whose pointer `<span>` inside each label is what is drawn, a Dialog and a MessageBox that fade out (Vue's
// `<Transition>`: `-leave-active` classes a frame before the fade starts) and are removed when it ends. The Dialog
// (an `aria-modal` panel in a fixed overlay, the page behind neither inert nor hidden) holds a Select whose list is
// teleported to the end of the body, outside the dialog. An invitations Table opens an invitation by a click on its
// row (`@row-click`: Element Plus listens on every row and cell, used or not), its status drawn as Tags (which listen
// for clicks no one handles) under a sortable Email header; a "More" Dropdown whose last item is set off by a divider.
// A Teams Tree whose every node, leaves too, says `aria-expanded="false"` while closed (a leaf's expand icon is drawn
// invisible, `is-leaf`).
import { createApp, h, reactive } from 'vue';
import {
  ElMenu,
  ElMenuItem,
  ElSelect,
  ElOption,
  ElSwitch,
  ElRate,
  ElButton,
  ElDialog,
  ElForm,
  ElFormItem,
  ElInput,
  ElMessageBox,
  ElRadioGroup,
  ElRadioButton,
  ElTable,
  ElTableColumn,
  ElTag,
  ElDropdown,
  ElDropdownMenu,
  ElDropdownItem,
  ElTree,
} from 'element-plus';
import css from 'element-plus/dist/index.css';
import { record, pageData } from './record.js';

const data = pageData();
const state = reactive({
  menu: data.menu[data.active][0],
  region: '',
  notify: data.notify,
  rate: data.rate,
  size: data.sizes[1],
  dialog: false,
  name: '',
  team: '',
  people: data.people.map(([id, name]) => ({ id, name })),
  invites: data.invites.map(([id, email, team, status]) => ({ id, email, team, status })),
  last: 'Last action: none',
});
// Made once: a new array at each render would reset the tree (its open nodes) whenever the page re-renders.
const teams = data.tree.map(([id, label, children]) => ({
  id,
  label,
  children: children.map(([cid, clabel]) => ({ id: cid, label: clabel })),
}));
const note = (event) => {
  record(event);
  state.last = `Last action: ${event}`;
};
const confirmDelete = (p) =>
  ElMessageBox.confirm(`Delete ${p.name}?`, 'Delete person', { confirmButtonText: 'Delete', cancelButtonText: 'Keep' })
    .then(() => {
      state.people = state.people.filter((x) => x.id !== p.id);
      note(`delete:${p.id}`);
    })
    .catch(() => note(`keep:${p.id}`));

const App = {
  render: () =>
    h('div', { style: 'display:flex;gap:16px;padding:12px' }, [
      h(
        ElMenu,
        { defaultActive: state.menu, style: 'width:160px', onSelect: (k) => { state.menu = k; note(`menu:${k}`); } },
        () => data.menu.map(([key, label]) => h(ElMenuItem, { index: key }, () => label)),
      ),
      h('main', { style: 'flex:1;max-width:560px' }, [
        h('h1', { style: 'font-size:20px;margin:4px 0' }, data.title),
        h('p', state.last),
        h(ElForm, { labelWidth: '120px' }, () => [
          h(ElFormItem, { label: 'Region' }, () =>
            h(
              ElSelect,
              {
                modelValue: state.region,
                placeholder: data.regionPlaceholder,
                style: 'width:200px',
                'onUpdate:modelValue': (v) => { state.region = v; note(`region:${v}`); },
              },
              () => data.regions.map(([value, label]) => h(ElOption, { value, label })),
            ),
          ),
          h(ElFormItem, { label: 'Notifications' }, () =>
            h(ElSwitch, {
              modelValue: state.notify,
              'onUpdate:modelValue': (v) => { state.notify = v; note(`notify:${v}`); },
            }),
          ),
          h(ElFormItem, { label: 'Satisfaction' }, () =>
            h(ElRate, { modelValue: state.rate, 'onUpdate:modelValue': (v) => { state.rate = v; note(`rate:${v}`); } }),
          ),
          h(ElFormItem, { label: 'Density' }, () =>
            h(
              ElRadioGroup,
              { modelValue: state.size, 'onUpdate:modelValue': (v) => { state.size = v; note(`size:${v}`); } },
              () => data.sizes.map((s) => h(ElRadioButton, { value: s, label: s })),
            ),
          ),
        ]),
        h('h2', { style: 'font-size:16px' }, 'People'),
        h(
          'ul',
          state.people.map((p) =>
            h('li', { key: p.id, style: 'margin:4px 0' }, [
              h('span', { style: 'margin-right:8px' }, p.name),
              h(ElButton, { size: 'small', type: 'danger', onClick: () => confirmDelete(p) }, () => 'Delete'),
            ]),
          ),
        ),
        h(ElButton, { type: 'primary', onClick: () => { state.dialog = true; note('add'); } }, () => 'Add person'),
        h('h2', { style: 'font-size:16px' }, 'Teams'),
        h(ElTree, {
          data: teams,
          nodeKey: 'id',
          onNodeClick: (node) => note(`team-node:${node.id}`),
        }),
        h('h2', { style: 'font-size:16px' }, 'Invitations'),
        h(
          ElTable,
          {
            data: state.invites,
            rowKey: 'id',
            style: 'width:100%',
            rowStyle: { cursor: 'pointer' },
            onRowClick: (row) => note(`invite:${row.id}`),
          },
          () => [
            h(ElTableColumn, { prop: 'email', label: 'Email', sortable: true }),
            h(ElTableColumn, { prop: 'team', label: 'Team', width: 120 }),
            h(ElTableColumn, { label: 'Status', width: 110 }, {
              default: ({ row }) =>
                h(ElTag, { type: row.status === 'Accepted' ? 'success' : 'warning', size: 'small' }, () => row.status),
            }),
          ],
        ),
        h(
          ElDropdown,
          { trigger: 'click', style: 'margin-top:8px', onCommand: (c) => note(`more:${c}`) },
          {
            default: () => h(ElButton, null, () => 'More'),
            dropdown: () =>
              h(ElDropdownMenu, null, () =>
                data.more.map(([command, label], i) =>
                  h(ElDropdownItem, { command, divided: i === data.more.length - 1 }, () => label),
                ),
              ),
          },
        ),
        h(
          ElDialog,
          { modelValue: state.dialog, 'onUpdate:modelValue': (v) => { state.dialog = v; }, title: 'Add person', width: 420 },
          {
            default: () =>
              h(ElForm, { labelWidth: '80px' }, () => [
                h(ElFormItem, { label: 'Name' }, () =>
                  h(ElInput, { modelValue: state.name, 'onUpdate:modelValue': (v) => { state.name = v; }, placeholder: 'Full name' }),
                ),
                h(ElFormItem, { label: 'Team' }, () =>
                  h(
                    ElSelect,
                    {
                      modelValue: state.team,
                      placeholder: 'Choose a team',
                      'onUpdate:modelValue': (v) => { state.team = v; note(`team:${v}`); },
                    },
                    () => data.teams.map((t) => h(ElOption, { value: t, label: t })),
                  ),
                ),
              ]),
            footer: () => [
              h(ElButton, { onClick: () => { state.dialog = false; note('dialog:cancel'); } }, () => 'Cancel'),
              h(
                ElButton,
                {
                  type: 'primary',
                  onClick: () => {
                    state.dialog = false;
                    state.people.push({ id: `new${state.people.length}`, name: state.name });
                    note(`dialog:confirm:${state.name}`);
                  },
                },
                () => 'Confirm',
              ),
            ],
          },
        ),
      ]),
    ]),
};

const style = document.createElement('style');
style.textContent = css;
document.head.append(style);
createApp(App).mount('#root');
