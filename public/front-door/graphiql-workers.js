// GraphiQL's editor (Monaco) starts web workers; they are served from this origin.
self.MonacoEnvironment = {
  globalAPI: false,
  getWorkerUrl(_moduleId, label) {
    const base = '/assets/graphiql/monacoeditorwork/';
    if (label === 'json') return base + 'json.worker.bundle.js';
    if (label === 'graphql') return base + 'graphql.worker..bundle.js';
    return base + 'editor.worker.bundle.js';
  },
};
