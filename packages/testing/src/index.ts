export * from './ferretdb'
export * from './isolation'
