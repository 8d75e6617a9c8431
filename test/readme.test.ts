/**
 * The README shows what `npm run dev` prints once the service is up, with the development defaults; this keeps that
 * block equal to the banner scripts/dev.ts prints (scripts/lib/dev-banner.ts).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '@svc/config'
import { devBanner } from '../scripts/lib/dev-banner'

it("README's dev banner is the one npm run dev prints with the development defaults", () => {
  const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8')
  const banner = devBanner(loadConfig({ NODE_ENV: 'development' }))
  expect(banner).toContain('tickets subgraph')
  expect(readme).toContain('```\n' + banner + '```\n')
})
