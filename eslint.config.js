// One lint configuration and one run (`npm run lint`, `eslint .` at the root) for every workspace.
const js = require('@eslint/js')
const tseslint = require('typescript-eslint')

module.exports = tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.data/**', 'bench-results/**', 'packages/testing/jest/**', 'jest.config.js', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['error', 'warn'] }],
    },
  },
  {
    // command-line programs print to the terminal
    files: ['scripts/**/*.ts', '**/cli/**/*.ts', '**/test/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    // the CommonJS configuration files at the root
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    files: ['**/test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
)
