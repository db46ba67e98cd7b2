import rootPackage from '../../../package.json' with { type: 'json' };

/** The version of Assistant as a whole: the root package.json's, shared by every app. */
export const assistantVersion: string = rootPackage.version;
