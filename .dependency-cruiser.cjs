/**
 * The layer rules of docs/architecture.md, checked by test/layers.test.ts on every test run.
 * Paths are the real files: `@svc/*` imports resolve through the workspace links to the folder they live in.
 */
const SERVICE_LAYERS_ABOVE_DOMAIN = 'src/(resolvers|schema|server|main|index)\\.ts$|src/(cli|workers|board|delivery)/'

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'an import cycle hides which piece depends on which',
      severity: 'error',
      from: { pathNot: 'node_modules' },
      to: { circular: true },
    },
    {
      name: 'shared-packages-know-no-domain',
      comment: 'a shared package that knew a domain, the gateway or the edge would tie every domain to it',
      severity: 'error',
      from: { path: '^(packages|lexicons)/' },
      to: { path: '^(services|gateway|xrpc-adapter|test|scripts)/' },
    },
    {
      name: 'domains-are-independent',
      comment: "a domain reads another domain's facts through the graph, never its code or collections",
      severity: 'error',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/', pathNot: '^services/$1/' },
    },
    {
      name: 'domains-know-no-edge',
      severity: 'error',
      from: { path: '^services/' },
      to: { path: '^(gateway|xrpc-adapter|test|scripts)/' },
    },
    {
      name: 'gateway-knows-no-domain',
      comment: 'the gateway composes the subgraphs over HTTP',
      severity: 'error',
      from: { path: '^gateway/' },
      to: { path: '^(services|xrpc-adapter|test|scripts)/' },
    },
    {
      name: 'edge-knows-no-domain',
      comment: 'the edge reaches the domains only through the gateway, so it can never skip its authentication',
      severity: 'error',
      from: { path: '^xrpc-adapter/' },
      to: { path: '^(services|gateway|test|scripts)/' },
    },
    {
      name: 'only-scripts-use-the-test-stack',
      severity: 'error',
      from: { pathNot: '^(test|scripts)/' },
      to: { path: '^(test|scripts)/' },
    },
    {
      name: 'domain-does-not-import-upward',
      comment: 'use cases and models know nothing of how they are served (GraphQL, CLI, workers)',
      severity: 'error',
      from: { path: '^services/[^/]+/src/(domain|models)/' },
      to: { path: `^services/[^/]+/(${SERVICE_LAYERS_ABOVE_DOMAIN})` },
    },
    {
      name: 'models-below-domain',
      severity: 'error',
      from: { path: '^services/[^/]+/src/models/' },
      to: { path: '^services/[^/]+/src/domain/' },
    },
    {
      name: 'workers-do-not-import-the-server',
      severity: 'error',
      from: { path: '^services/[^/]+/src/(workers|delivery|board|cli)/' },
      to: { path: '^services/[^/]+/src/(server|resolvers|main)\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|\\.data)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
}
