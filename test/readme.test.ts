/**
 * What the README says of running the service stays true: the block it shows of what `npm run dev` prints is the
 * banner scripts/dev.ts prints (scripts/lib/dev-banner.ts) with the development defaults, and its configuration
 * paragraph names every environment variable packages/config reads.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CONFIG_VARIABLES, loadConfig } from '@svc/config'
import { devBanner } from '../scripts/lib/dev-banner'

const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8')

it("README's dev banner is the one npm run dev prints with the development defaults", () => {
  const banner = devBanner(loadConfig({ NODE_ENV: 'development' }))
  expect(banner).toContain('tickets subgraph')
  expect(readme).toContain('```\n' + banner + '```\n')
})

it('the README names every environment variable of the configuration', () => {
  expect(CONFIG_VARIABLES.length).toBeGreaterThan(50)
  // the context keys' rotation companions are named once for all: "each with a `_PREVIOUS` companion"
  const unnamed = CONFIG_VARIABLES.filter((name) => !readme.includes(`\`${name}\``) && !(/_CONTEXT_KEY_PREVIOUS$/.test(name) && readme.includes(`\`${name.replace(/_PREVIOUS$/, '')}\``)))
  expect(unnamed).toEqual([])
})
