// Jest transformer: TypeScript sources, and ESM-only dependencies, compiled to CommonJS by swc.
// Node 20 loads ESM packages through require(esm); jest's module runtime cannot (it needs Node 24.9+),
// so files of packages that ship ESM (package.json "type": "module", or .mjs) are compiled on the fly.
// CommonJS files in node_modules pass through untouched.
const fs = require('node:fs')
const path = require('node:path')
const swcJest = require('@swc/jest')

const swc = swcJest.createTransformer({
  jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
  module: { type: 'commonjs', strictMode: false },
  sourceMaps: 'inline',
})

const typeCache = new Map()
function packageType(dir) {
  if (typeCache.has(dir)) return typeCache.get(dir)
  let type = 'commonjs'
  const pj = path.join(dir, 'package.json')
  if (fs.existsSync(pj)) {
    const parsed = JSON.parse(fs.readFileSync(pj, 'utf8'))
    if (parsed.type !== undefined || parsed.name !== undefined) type = parsed.type ?? 'commonjs'
    else type = packageType(path.dirname(dir))
  } else if (path.dirname(dir) !== dir) {
    type = packageType(path.dirname(dir))
  }
  typeCache.set(dir, type)
  return type
}

function isEsm(filename) {
  if (filename.endsWith('.mjs')) return true
  if (filename.endsWith('.cjs')) return false
  return packageType(path.dirname(filename)) === 'module'
}

module.exports = {
  process(src, filename, options) {
    if (filename.includes(`${path.sep}node_modules${path.sep}`) && !isEsm(filename)) return { code: src }
    return swc.process(src, filename, options)
  },
  getCacheKey(src, filename, options) {
    return swc.getCacheKey(src, filename, options) + (isEsm(filename) ? ':esm' : ':cjs')
  },
}
