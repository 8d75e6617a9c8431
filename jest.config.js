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
  testTimeout: 60000,
}
