// console/ owns the cohort web console: a Preact single-page app, bundled by console/build.mjs
// into dist/console/ and served at / by src/gateway/console.ts. It talks only to the public
// /api/v1 API with a key the user pastes (api.ts says where the key may and may not go).
// Screens: interns and their chat, workspaces, presets, provider credentials, usage.
import { render } from 'preact';
import { App } from './app.tsx';
import './style.css';

render(<App />, document.getElementById('app')!);
