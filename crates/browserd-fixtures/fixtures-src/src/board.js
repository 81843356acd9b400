// The sprint board's entry: mounts the Svelte 5 component (board.svelte) into #root.
import { mount } from 'svelte';
import Board from './board.svelte';

mount(Board, { target: document.getElementById('root') });
