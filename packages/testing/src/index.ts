export * from './ferretdb'
export * from './contract-error'
export * from './isolation'
export * from './internal-context'
