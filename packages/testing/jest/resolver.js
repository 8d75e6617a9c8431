// Jest resolver: the default one, and for packages whose "exports" offer only an "import" condition
// (ESM-only packages such as multiformats and cborg) a second try with that condition.
module.exports = (request, options) => {
  try {
    return options.defaultResolver(request, options)
  } catch (error) {
    if (request.startsWith('.') || request.startsWith('/')) throw error
    return options.defaultResolver(request, { ...options, conditions: [...(options.conditions ?? []), 'import'] })
  }
}
