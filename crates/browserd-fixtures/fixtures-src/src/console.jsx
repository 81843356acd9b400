// A team console built with Ant Design 6 (React 19), the way antd admin apps are: a breadcrumb whose separators are
// aria-hidden, a Select whose input has no name of its own (the placeholder is a sibling <div>, the wrapper takes
// the clicks) and whose open list is drawn twice (a 0×0 accessible listbox and the visible options a user clicks),
// Tabs whose role="tab" sits inside a clickable wrapper, a Table with row selection and a Pagination whose items are
// focusable <li>s around <a>s without href, a checkable Tree whose switchers are icons (role="img" aria-label
// "caret-down") inside each treeitem, and a Rate of radios drawn as two star icons each.
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { Breadcrumb, Select, Tabs, Table, Tree, Rate, Button, Space } from 'antd';
import { record, pageData } from './record.js';

function App({ data }) {
  const [last, setLast] = useState('Last action: none');
  const note = (event) => {
    record(event);
    setLast(`Last action: ${event}`);
  };
  const columns = [
    { title: 'Name', dataIndex: 'name' },
    { title: 'Email', dataIndex: 'email' },
    { title: 'Role', dataIndex: 'role' },
    { title: 'Action', key: 'action', render: (_, m) => <a onClick={() => note(`edit:${m.key}`)}>Edit</a> },
  ];
  const members = data.members.map(([key, name, email, role]) => ({ key, name, email, role }));
  const tree = data.permissions.map(([key, title, children]) => ({
    key,
    title,
    children: children.map(([k, t]) => ({ key: k, title: t })),
  }));
  return (
    <div style={{ padding: 16, maxWidth: 900 }}>
      <Breadcrumb items={data.crumbs.map((title) => ({ title }))} />
      <h1 style={{ fontSize: 22, margin: '8px 0' }}>{data.title}</h1>
      <p>{last}</p>
      <Space wrap>
        <Select
          style={{ width: 180 }}
          placeholder={data.regionPlaceholder}
          onChange={(v) => note(`region:${v}`)}
          options={data.regions.map(([value, label, disabled]) => ({ value, label, disabled }))}
        />
        <Button type="primary" onClick={() => note('invite')}>Invite member</Button>
      </Space>
      <Tabs
        defaultActiveKey={data.tabs[0]}
        onTabClick={(k) => note(`tab:${k}`)}
        items={data.tabs.map((t) => ({ key: t, label: t, children: `${t} of the team` }))}
      />
      <Table
        size="small"
        rowSelection={{
          onSelect: (m, selected) => note(`select:${m.key}:${selected}`),
          onSelectAll: (selected) => note(`select:all:${selected}`),
        }}
        columns={columns}
        dataSource={members}
        pagination={{ pageSize: data.pageSize, onChange: (p) => note(`page:${p}`) }}
      />
      <h2 style={{ fontSize: 16 }}>Permissions</h2>
      <Tree
        checkable
        defaultExpandedKeys={[tree[0].key]}
        onCheck={(_, info) => note(`perm:${info.node.key}:${info.checked}`)}
        onSelect={(_, info) => note(`open:${info.node.key}`)}
        treeData={tree}
      />
      <h2 style={{ fontSize: 16 }}>How is the console?</h2>
      <Rate defaultValue={data.rating} onChange={(v) => note(`rate:${v}`)} />
    </div>
  );
}

createRoot(document.getElementById('root')).render(<App data={pageData()} />);
