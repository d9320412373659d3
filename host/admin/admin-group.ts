/** The group whose chat is the owner's: approvals, notices and owner commands live there. */
export const ADMIN_GROUP_ID = 'main';
