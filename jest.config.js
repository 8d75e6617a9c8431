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
  // Two test files at a time, one per core: each file has its own database and Redis key prefix, and most wait on
  // I/O (the whole suite: 826 s in one worker, 515 s in two, on 2 cores). Each worker is replaced once a file leaves it
  // above 1.5 GB: the module registry of every file run in one process stays reachable (about 45 MB a file), and in
  // band the heap reached several GB, slowing every later file's garbage collection.
  maxWorkers: 2,
  workerIdleMemoryLimit: '1536MB',
}
