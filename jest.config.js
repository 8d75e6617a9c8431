/** Jest runs the TypeScript sources directly (swc), as tsx does at run time: no build step. */

module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>'],
  testMatch: ['**/test/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  transform: { '^.+\.(t|j|mj|cj)s$': '<rootDir>/packages/testing/jest/transform.js' },
  transformIgnorePatterns: [],
  resolver: '<rootDir>/packages/testing/jest/resolver.js',
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  globalSetup: '<rootDir>/packages/testing/src/global-setup.ts',
  globalTeardown: '<rootDir>/packages/testing/src/global-teardown.ts',
  // every file fails on a query of the service's own code that no index serves on MongoDB (FerretDB cannot show it)
  setupFilesAfterEnv: ['<rootDir>/packages/testing/src/indexed-queries.ts'],
  testTimeout: 60000,
  // One test file at a time (the integration tests share one FerretDB and the crowd tests need both cores), in a
  // worker that jest replaces once a file leaves it above 1.5 GB: the module registry of every file run in one
  // process stays reachable (about 45 MB a file), and in-band the heap reached several GB, slowing every later file's
  // garbage collection (the whole suite: 873 s in band, 678 s this way, on 2 cores).
  maxWorkers: 1,
  workerIdleMemoryLimit: '1536MB',
}
