-- The Hive 2.3 metastore schema (Spark 3.5's built-in Hive client) for SQLite, as DataNucleus's SchemaTool
-- generates it from Hive's package.jdo with the SQLite adapter, plus DataNucleus's SEQUENCE_TABLE.
-- tablespec creates the embedded metastore from it without a JVM (see tablespec/catalog/metastore.py).
-- ----------------------------------------------------------------
-- ----------------------------------------------------------------
-- Complete schema required for the following classes:-
--     org.apache.hadoop.hive.metastore.model.MColumnDescriptor
--     org.apache.hadoop.hive.metastore.model.MConstraint
--     org.apache.hadoop.hive.metastore.model.MDBPrivilege
--     org.apache.hadoop.hive.metastore.model.MDatabase
--     org.apache.hadoop.hive.metastore.model.MDelegationToken
--     org.apache.hadoop.hive.metastore.model.MFieldSchema
--     org.apache.hadoop.hive.metastore.model.MFunction
--     org.apache.hadoop.hive.metastore.model.MGlobalPrivilege
--     org.apache.hadoop.hive.metastore.model.MIndex
--     org.apache.hadoop.hive.metastore.model.MMasterKey
--     org.apache.hadoop.hive.metastore.model.MNotificationLog
--     org.apache.hadoop.hive.metastore.model.MNotificationNextId
--     org.apache.hadoop.hive.metastore.model.MOrder
--     org.apache.hadoop.hive.metastore.model.MPartition
--     org.apache.hadoop.hive.metastore.model.MPartitionColumnPrivilege
--     org.apache.hadoop.hive.metastore.model.MPartitionColumnStatistics
--     org.apache.hadoop.hive.metastore.model.MPartitionEvent
--     org.apache.hadoop.hive.metastore.model.MPartitionPrivilege
--     org.apache.hadoop.hive.metastore.model.MResourceUri
--     org.apache.hadoop.hive.metastore.model.MRole
--     org.apache.hadoop.hive.metastore.model.MRoleMap
--     org.apache.hadoop.hive.metastore.model.MSerDeInfo
--     org.apache.hadoop.hive.metastore.model.MStorageDescriptor
--     org.apache.hadoop.hive.metastore.model.MStringList
--     org.apache.hadoop.hive.metastore.model.MTable
--     org.apache.hadoop.hive.metastore.model.MTableColumnPrivilege
--     org.apache.hadoop.hive.metastore.model.MTableColumnStatistics
--     org.apache.hadoop.hive.metastore.model.MTablePrivilege
--     org.apache.hadoop.hive.metastore.model.MType
--     org.apache.hadoop.hive.metastore.model.MVersionTable
--
-- Table DB_PRIVS for classes [org.apache.hadoop.hive.metastore.model.MDBPrivilege]
CREATE TABLE DB_PRIVS
(
    DB_GRANT_ID bigint NOT NULL,
    CREATE_TIME INTEGER NOT NULL,
    DB_ID bigint NULL,
    GRANT_OPTION smallint NOT NULL CHECK (GRANT_OPTION IN (0,1)),
    GRANTOR varchar(128) NULL,
    GRANTOR_TYPE varchar(128) NULL,
    PRINCIPAL_NAME varchar(128) NULL,
    PRINCIPAL_TYPE varchar(128) NULL,
    DB_PRIV varchar(128) NULL,
    CONSTRAINT DB_PRIVS_PK PRIMARY KEY (DB_GRANT_ID),
    CHECK (GRANT_OPTION IN (0,1))
);

-- Table ROLE_MAP for classes [org.apache.hadoop.hive.metastore.model.MRoleMap]
CREATE TABLE ROLE_MAP
(
    ROLE_GRANT_ID bigint NOT NULL,
    ADD_TIME INTEGER NOT NULL,
    GRANT_OPTION smallint NOT NULL CHECK (GRANT_OPTION IN (0,1)),
    GRANTOR varchar(128) NULL,
    GRANTOR_TYPE varchar(128) NULL,
    PRINCIPAL_NAME varchar(128) NULL,
    PRINCIPAL_TYPE varchar(128) NULL,
    ROLE_ID bigint NULL,
    CONSTRAINT ROLE_MAP_PK PRIMARY KEY (ROLE_GRANT_ID),
    CHECK (GRANT_OPTION IN (0,1))
);

-- Table TYPES for classes [org.apache.hadoop.hive.metastore.model.MType]
CREATE TABLE TYPES
(
    TYPES_ID bigint NOT NULL,
    TYPE_NAME varchar(128) NULL,
    TYPE1 varchar(767) NULL,
    TYPE2 varchar(767) NULL,
    CONSTRAINT TYPES_PK PRIMARY KEY (TYPES_ID)
);

-- Table PARTITIONS for classes [org.apache.hadoop.hive.metastore.model.MPartition]
CREATE TABLE PARTITIONS
(
    PART_ID bigint NOT NULL,
    CREATE_TIME INTEGER NOT NULL,
    LAST_ACCESS_TIME INTEGER NOT NULL,
    PART_NAME varchar(767) NULL,
    SD_ID bigint NULL,
    TBL_ID bigint NULL,
    CONSTRAINT PARTITIONS_PK PRIMARY KEY (PART_ID)
);

-- Table SKEWED_STRING_LIST for classes [org.apache.hadoop.hive.metastore.model.MStringList]
CREATE TABLE SKEWED_STRING_LIST
(
    STRING_LIST_ID bigint NOT NULL,
    CONSTRAINT SKEWED_STRING_LIST_PK PRIMARY KEY (STRING_LIST_ID)
);

-- Table DBS for classes [org.apache.hadoop.hive.metastore.model.MDatabase]
CREATE TABLE DBS
(
    DB_ID bigint NOT NULL,
    "DESC" varchar(4000) NULL,
    DB_LOCATION_URI varchar(4000) NOT NULL,
    "NAME" varchar(128) NULL,
    OWNER_NAME varchar(128) NULL,
    OWNER_TYPE varchar(10) NULL,
    CONSTRAINT DBS_PK PRIMARY KEY (DB_ID)
);

-- Table NOTIFICATION_SEQUENCE for classes [org.apache.hadoop.hive.metastore.model.MNotificationNextId]
CREATE TABLE NOTIFICATION_SEQUENCE
(
    NNI_ID bigint NOT NULL,
    NEXT_EVENT_ID bigint NOT NULL,
    CONSTRAINT NOTIFICATION_SEQUENCE_PK PRIMARY KEY (NNI_ID)
);

-- Table FUNCS for classes [org.apache.hadoop.hive.metastore.model.MFunction]
CREATE TABLE FUNCS
(
    FUNC_ID bigint NOT NULL,
    CLASS_NAME varchar(4000) NULL,
    CREATE_TIME INTEGER NOT NULL,
    DB_ID bigint NULL,
    FUNC_NAME varchar(128) NULL,
    FUNC_TYPE INTEGER NOT NULL,
    OWNER_NAME varchar(128) NULL,
    OWNER_TYPE varchar(10) NULL,
    CONSTRAINT FUNCS_PK PRIMARY KEY (FUNC_ID)
);

-- Table CDS for classes [org.apache.hadoop.hive.metastore.model.MColumnDescriptor]
CREATE TABLE CDS
(
    CD_ID bigint NOT NULL,
    CONSTRAINT CDS_PK PRIMARY KEY (CD_ID)
);

-- Table KEY_CONSTRAINTS for classes [org.apache.hadoop.hive.metastore.model.MConstraint]
CREATE TABLE KEY_CONSTRAINTS
(
    "CONSTRAINT_NAME" varchar(255) NOT NULL,
    "POSITION" INTEGER NOT NULL,
    CHILD_CD_ID bigint NULL,
    CHILD_INTEGER_IDX INTEGER NULL,
    CHILD_TBL_ID bigint NULL,
    CONSTRAINT_TYPE INTEGER NOT NULL,
    DELETE_RULE INTEGER NULL,
    ENABLE_VALIDATE_RELY INTEGER NOT NULL,
    PARENT_CD_ID bigint NULL,
    PARENT_INTEGER_IDX INTEGER NULL,
    PARENT_TBL_ID bigint NULL,
    UPDATE_RULE INTEGER NULL,
    CONSTRAINT KEY_CONSTRAINTS_PK PRIMARY KEY ("CONSTRAINT_NAME","POSITION")
);

-- Table IDXS for classes [org.apache.hadoop.hive.metastore.model.MIndex]
CREATE TABLE IDXS
(
    INDEX_ID bigint NOT NULL,
    CREATE_TIME INTEGER NOT NULL,
    DEFERRED_REBUILD integer NOT NULL,
    INDEX_HANDLER_CLASS varchar(4000) NULL,
    INDEX_NAME varchar(128) NULL,
    INDEX_TBL_ID bigint NULL,
    LAST_ACCESS_TIME INTEGER NOT NULL,
    ORIG_TBL_ID bigint NULL,
    SD_ID bigint NULL,
    CONSTRAINT IDXS_PK PRIMARY KEY (INDEX_ID)
);

-- Table SDS for classes [org.apache.hadoop.hive.metastore.model.MStorageDescriptor]
CREATE TABLE SDS
(
    SD_ID bigint NOT NULL,
    CD_ID bigint NULL,
    INPUT_FORMAT varchar(4000) NULL,
    IS_COMPRESSED integer NOT NULL,
    IS_STOREDASSUBDIRECTORIES integer NOT NULL,
    LOCATION varchar(4000) NULL,
    NUM_BUCKETS INTEGER NOT NULL,
    OUTPUT_FORMAT varchar(4000) NULL,
    SERDE_ID bigint NULL,
    CONSTRAINT SDS_PK PRIMARY KEY (SD_ID)
);

-- Table MASTER_KEYS for classes [org.apache.hadoop.hive.metastore.model.MMasterKey]
CREATE TABLE MASTER_KEYS
(
    KEY_ID INTEGER NOT NULL,
    MASTER_KEY varchar(767) NULL,
    CONSTRAINT MASTER_KEYS_PK PRIMARY KEY (KEY_ID)
);

-- Table PART_COL_PRIVS for classes [org.apache.hadoop.hive.metastore.model.MPartitionColumnPrivilege]
CREATE TABLE PART_COL_PRIVS
(
    PART_COLUMN_GRANT_ID bigint NOT NULL,
    "COLUMN_NAME" varchar(767) NULL,
    CREATE_TIME INTEGER NOT NULL,
    GRANT_OPTION smallint NOT NULL CHECK (GRANT_OPTION IN (0,1)),
    GRANTOR varchar(128) NULL,
    GRANTOR_TYPE varchar(128) NULL,
    PART_ID bigint NULL,
    PRINCIPAL_NAME varchar(128) NULL,
    PRINCIPAL_TYPE varchar(128) NULL,
    PART_COL_PRIV varchar(128) NULL,
    CONSTRAINT PART_COL_PRIVS_PK PRIMARY KEY (PART_COLUMN_GRANT_ID),
    CHECK (GRANT_OPTION IN (0,1))
);

-- Table PART_COL_STATS for classes [org.apache.hadoop.hive.metastore.model.MPartitionColumnStatistics]
CREATE TABLE PART_COL_STATS
(
    CS_ID bigint NOT NULL,
    AVG_COL_LEN double NULL,
    "COLUMN_NAME" varchar(767) NOT NULL,
    COLUMN_TYPE varchar(128) NOT NULL,
    DB_NAME varchar(128) NOT NULL,
    BIG_DECIMAL_HIGH_VALUE varchar(255) NULL,
    BIG_DECIMAL_LOW_VALUE varchar(255) NULL,
    DOUBLE_HIGH_VALUE double NULL,
    DOUBLE_LOW_VALUE double NULL,
    LAST_ANALYZED bigint NOT NULL,
    LONG_HIGH_VALUE bigint NULL,
    LONG_LOW_VALUE bigint NULL,
    MAX_COL_LEN bigint NULL,
    NUM_DISTINCTS bigint NULL,
    NUM_FALSES bigint NULL,
    NUM_NULLS bigint NOT NULL,
    NUM_TRUES bigint NULL,
    PART_ID bigint NULL,
    PARTITION_NAME varchar(767) NOT NULL,
    "TABLE_NAME" varchar(256) NOT NULL,
    CONSTRAINT PART_COL_STATS_PK PRIMARY KEY (CS_ID)
);

-- Table TAB_COL_STATS for classes [org.apache.hadoop.hive.metastore.model.MTableColumnStatistics]
CREATE TABLE TAB_COL_STATS
(
    CS_ID bigint NOT NULL,
    AVG_COL_LEN double NULL,
    "COLUMN_NAME" varchar(767) NOT NULL,
    COLUMN_TYPE varchar(128) NOT NULL,
    DB_NAME varchar(128) NOT NULL,
    BIG_DECIMAL_HIGH_VALUE varchar(255) NULL,
    BIG_DECIMAL_LOW_VALUE varchar(255) NULL,
    DOUBLE_HIGH_VALUE double NULL,
    DOUBLE_LOW_VALUE double NULL,
    LAST_ANALYZED bigint NOT NULL,
    LONG_HIGH_VALUE bigint NULL,
    LONG_LOW_VALUE bigint NULL,
    MAX_COL_LEN bigint NULL,
    NUM_DISTINCTS bigint NULL,
    NUM_FALSES bigint NULL,
    NUM_NULLS bigint NOT NULL,
    NUM_TRUES bigint NULL,
    TBL_ID bigint NULL,
    "TABLE_NAME" varchar(256) NOT NULL,
    CONSTRAINT TAB_COL_STATS_PK PRIMARY KEY (CS_ID)
);

-- Table GLOBAL_PRIVS for classes [org.apache.hadoop.hive.metastore.model.MGlobalPrivilege]
CREATE TABLE GLOBAL_PRIVS
(
    USER_GRANT_ID bigint NOT NULL,
    CREATE_TIME INTEGER NOT NULL,
    GRANT_OPTION smallint NOT NULL CHECK (GRANT_OPTION IN (0,1)),
    GRANTOR varchar(128) NULL,
    GRANTOR_TYPE varchar(128) NULL,
    PRINCIPAL_NAME varchar(128) NULL,
    PRINCIPAL_TYPE varchar(128) NULL,
    USER_PRIV varchar(128) NULL,
    CONSTRAINT GLOBAL_PRIVS_PK PRIMARY KEY (USER_GRANT_ID),
    CHECK (GRANT_OPTION IN (0,1))
);

-- Table TBLS for classes [org.apache.hadoop.hive.metastore.model.MTable]
CREATE TABLE TBLS
(
    TBL_ID bigint NOT NULL,
    CREATE_TIME INTEGER NOT NULL,
    DB_ID bigint NULL,
    LAST_ACCESS_TIME INTEGER NOT NULL,
    OWNER varchar(767) NULL,
    RETENTION INTEGER NOT NULL,
    IS_REWRITE_ENABLED integer NOT NULL,
    SD_ID bigint NULL,
    TBL_NAME varchar(256) NULL,
    TBL_TYPE varchar(128) NULL,
    VIEW_EXPANDED_TEXT longvarchar NULL,
    VIEW_ORIGINAL_TEXT longvarchar NULL,
    CONSTRAINT TBLS_PK PRIMARY KEY (TBL_ID)
);

-- Table TBL_PRIVS for classes [org.apache.hadoop.hive.metastore.model.MTablePrivilege]
CREATE TABLE TBL_PRIVS
(
    TBL_GRANT_ID bigint NOT NULL,
    CREATE_TIME INTEGER NOT NULL,
    GRANT_OPTION smallint NOT NULL CHECK (GRANT_OPTION IN (0,1)),
    GRANTOR varchar(128) NULL,
    GRANTOR_TYPE varchar(128) NULL,
    PRINCIPAL_NAME varchar(128) NULL,
    PRINCIPAL_TYPE varchar(128) NULL,
    TBL_PRIV varchar(128) NULL,
    TBL_ID bigint NULL,
    CONSTRAINT TBL_PRIVS_PK PRIMARY KEY (TBL_GRANT_ID),
    CHECK (GRANT_OPTION IN (0,1))
);

-- Table SERDES for classes [org.apache.hadoop.hive.metastore.model.MSerDeInfo]
CREATE TABLE SERDES
(
    SERDE_ID bigint NOT NULL,
    "NAME" varchar(128) NULL,
    SLIB varchar(4000) NULL,
    CONSTRAINT SERDES_PK PRIMARY KEY (SERDE_ID)
);

-- Table NOTIFICATION_LOG for classes [org.apache.hadoop.hive.metastore.model.MNotificationLog]
CREATE TABLE NOTIFICATION_LOG
(
    NL_ID bigint NOT NULL,
    DB_NAME varchar(128) NULL,
    EVENT_ID bigint NOT NULL,
    EVENT_TIME INTEGER NOT NULL,
    EVENT_TYPE varchar(32) NOT NULL,
    MESSAGE longvarchar NULL,
    MESSAGE_FORMAT varchar(16) NULL,
    TBL_NAME varchar(256) NULL,
    CONSTRAINT NOTIFICATION_LOG_PK PRIMARY KEY (NL_ID)
);

-- Table PARTITION_EVENTS for classes [org.apache.hadoop.hive.metastore.model.MPartitionEvent]
CREATE TABLE PARTITION_EVENTS
(
    PART_NAME_ID bigint NOT NULL,
    DB_NAME varchar(128) NULL,
    EVENT_TIME bigint NOT NULL,
    EVENT_TYPE INTEGER NOT NULL,
    PARTITION_NAME varchar(767) NULL,
    TBL_NAME varchar(256) NULL,
    CONSTRAINT PARTITION_EVENTS_PK PRIMARY KEY (PART_NAME_ID)
);

-- Table TBL_COL_PRIVS for classes [org.apache.hadoop.hive.metastore.model.MTableColumnPrivilege]
CREATE TABLE TBL_COL_PRIVS
(
    TBL_COLUMN_GRANT_ID bigint NOT NULL,
    "COLUMN_NAME" varchar(767) NULL,
    CREATE_TIME INTEGER NOT NULL,
    GRANT_OPTION smallint NOT NULL CHECK (GRANT_OPTION IN (0,1)),
    GRANTOR varchar(128) NULL,
    GRANTOR_TYPE varchar(128) NULL,
    PRINCIPAL_NAME varchar(128) NULL,
    PRINCIPAL_TYPE varchar(128) NULL,
    TBL_COL_PRIV varchar(128) NULL,
    TBL_ID bigint NULL,
    CONSTRAINT TBL_COL_PRIVS_PK PRIMARY KEY (TBL_COLUMN_GRANT_ID),
    CHECK (GRANT_OPTION IN (0,1))
);

-- Table VERSION for classes [org.apache.hadoop.hive.metastore.model.MVersionTable]
CREATE TABLE VERSION
(
    VER_ID bigint NOT NULL,
    SCHEMA_VERSION varchar(127) NOT NULL,
    VERSION_COMMENT varchar(255) NOT NULL,
    CONSTRAINT VERSION_PK PRIMARY KEY (VER_ID)
);

-- Table PART_PRIVS for classes [org.apache.hadoop.hive.metastore.model.MPartitionPrivilege]
CREATE TABLE PART_PRIVS
(
    PART_GRANT_ID bigint NOT NULL,
    CREATE_TIME INTEGER NOT NULL,
    GRANT_OPTION smallint NOT NULL CHECK (GRANT_OPTION IN (0,1)),
    GRANTOR varchar(128) NULL,
    GRANTOR_TYPE varchar(128) NULL,
    PART_ID bigint NULL,
    PRINCIPAL_NAME varchar(128) NULL,
    PRINCIPAL_TYPE varchar(128) NULL,
    PART_PRIV varchar(128) NULL,
    CONSTRAINT PART_PRIVS_PK PRIMARY KEY (PART_GRANT_ID),
    CHECK (GRANT_OPTION IN (0,1))
);

-- Table DELEGATION_TOKENS for classes [org.apache.hadoop.hive.metastore.model.MDelegationToken]
CREATE TABLE DELEGATION_TOKENS
(
    TOKEN_IDENT varchar(767) NOT NULL,
    TOKEN varchar(767) NULL,
    CONSTRAINT DELEGATION_TOKENS_PK PRIMARY KEY (TOKEN_IDENT)
);

-- Table ROLES for classes [org.apache.hadoop.hive.metastore.model.MRole]
CREATE TABLE ROLES
(
    ROLE_ID bigint NOT NULL,
    CREATE_TIME INTEGER NOT NULL,
    OWNER_NAME varchar(128) NULL,
    ROLE_NAME varchar(128) NULL,
    CONSTRAINT ROLES_PK PRIMARY KEY (ROLE_ID)
);

-- Table PARTITION_PARAMS for join relationship
CREATE TABLE PARTITION_PARAMS
(
    PART_ID bigint NOT NULL,
    PARAM_KEY varchar(256) NOT NULL,
    PARAM_VALUE varchar(4000) NULL,
    CONSTRAINT PARTITION_PARAMS_PK PRIMARY KEY (PART_ID,PARAM_KEY)
);

-- Table PARTITION_KEYS for join relationship
CREATE TABLE PARTITION_KEYS
(
    TBL_ID bigint NOT NULL,
    PKEY_COMMENT varchar(4000) NULL,
    PKEY_NAME varchar(128) NOT NULL,
    PKEY_TYPE varchar(767) NOT NULL,
    INTEGER_IDX INTEGER NOT NULL,
    CONSTRAINT PARTITION_KEY_PK PRIMARY KEY (TBL_ID,PKEY_NAME)
);

-- Table DATABASE_PARAMS for join relationship
CREATE TABLE DATABASE_PARAMS
(
    DB_ID bigint NOT NULL,
    PARAM_KEY varchar(180) NOT NULL,
    PARAM_VALUE varchar(4000) NULL,
    CONSTRAINT DATABASE_PARAMS_PK PRIMARY KEY (DB_ID,PARAM_KEY)
);

-- Table SORT_COLS for join relationship
CREATE TABLE SORT_COLS
(
    SD_ID bigint NOT NULL,
    "COLUMN_NAME" varchar(767) NULL,
    "ORDER" INTEGER NOT NULL,
    INTEGER_IDX INTEGER NOT NULL,
    CONSTRAINT SORT_COLS_PK PRIMARY KEY (SD_ID,INTEGER_IDX)
);

-- Table TYPE_FIELDS for join relationship
CREATE TABLE TYPE_FIELDS
(
    TYPE_NAME bigint NOT NULL,
    COMMENT varchar(256) NULL,
    FIELD_NAME varchar(128) NOT NULL,
    FIELD_TYPE varchar(767) NOT NULL,
    INTEGER_IDX INTEGER NOT NULL,
    CONSTRAINT TYPE_FIELDS_PK PRIMARY KEY (TYPE_NAME,FIELD_NAME)
);

-- Table TABLE_PARAMS for join relationship
CREATE TABLE TABLE_PARAMS
(
    TBL_ID bigint NOT NULL,
    PARAM_KEY varchar(256) NOT NULL,
    PARAM_VALUE varchar(32672) NULL,
    CONSTRAINT TABLE_PARAMS_PK PRIMARY KEY (TBL_ID,PARAM_KEY)
);

-- Table FUNC_RU for join relationship
CREATE TABLE FUNC_RU
(
    FUNC_ID bigint NOT NULL,
    RESOURCE_TYPE INTEGER NOT NULL,
    RESOURCE_URI varchar(4000) NULL,
    INTEGER_IDX INTEGER NOT NULL,
    CONSTRAINT FUNC_RU_PK PRIMARY KEY (FUNC_ID,INTEGER_IDX)
);

-- Table INDEX_PARAMS for join relationship
CREATE TABLE INDEX_PARAMS
(
    INDEX_ID bigint NOT NULL,
    PARAM_KEY varchar(256) NOT NULL,
    PARAM_VALUE varchar(4000) NULL,
    CONSTRAINT INDEX_PARAMS_PK PRIMARY KEY (INDEX_ID,PARAM_KEY)
);

-- Table BUCKETING_COLS for join relationship
CREATE TABLE BUCKETING_COLS
(
    SD_ID bigint NOT NULL,
    BUCKET_COL_NAME varchar(255) NULL,
    INTEGER_IDX INTEGER NOT NULL,
    CONSTRAINT BUCKETING_COLS_PK PRIMARY KEY (SD_ID,INTEGER_IDX)
);

-- Table COLUMNS_V2 for join relationship
CREATE TABLE COLUMNS_V2
(
    CD_ID bigint NOT NULL,
    COMMENT varchar(256) NULL,
    "COLUMN_NAME" varchar(767) NOT NULL,
    TYPE_NAME varchar(32672) NOT NULL,
    INTEGER_IDX INTEGER NOT NULL,
    CONSTRAINT COLUMNS_PK PRIMARY KEY (CD_ID,"COLUMN_NAME")
);

-- Table SKEWED_COL_NAMES for join relationship
CREATE TABLE SKEWED_COL_NAMES
(
    SD_ID bigint NOT NULL,
    SKEWED_COL_NAME varchar(255) NULL,
    INTEGER_IDX INTEGER NOT NULL,
    CONSTRAINT SKEWED_COL_NAMES_PK PRIMARY KEY (SD_ID,INTEGER_IDX)
);

-- Table SKEWED_VALUES for join relationship
CREATE TABLE SKEWED_VALUES
(
    SD_ID_OID bigint NOT NULL,
    STRING_LIST_ID_EID bigint NULL,
    INTEGER_IDX INTEGER NOT NULL,
    CONSTRAINT SKEWED_VALUES_PK PRIMARY KEY (SD_ID_OID,INTEGER_IDX)
);

-- Table PARTITION_KEY_VALS for join relationship
CREATE TABLE PARTITION_KEY_VALS
(
    PART_ID bigint NOT NULL,
    PART_KEY_VAL varchar(255) NULL,
    INTEGER_IDX INTEGER NOT NULL,
    CONSTRAINT PARTITION_KEY_VALS_PK PRIMARY KEY (PART_ID,INTEGER_IDX)
);

-- Table SKEWED_COL_VALUE_LOC_MAP for join relationship
CREATE TABLE SKEWED_COL_VALUE_LOC_MAP
(
    SD_ID bigint NOT NULL,
    STRING_LIST_ID_KID bigint NOT NULL,
    LOCATION varchar(4000) NULL,
    CONSTRAINT SKEWED_COL_VALUE_LOC_MAP_PK PRIMARY KEY (SD_ID,STRING_LIST_ID_KID)
);

-- Table SERDE_PARAMS for join relationship
CREATE TABLE SERDE_PARAMS
(
    SERDE_ID bigint NOT NULL,
    PARAM_KEY varchar(256) NOT NULL,
    PARAM_VALUE varchar(32672) NULL,
    CONSTRAINT SERDE_PARAMS_PK PRIMARY KEY (SERDE_ID,PARAM_KEY)
);

-- Table SKEWED_STRING_LIST_VALUES for join relationship
CREATE TABLE SKEWED_STRING_LIST_VALUES
(
    STRING_LIST_ID bigint NOT NULL,
    STRING_LIST_VALUE varchar(255) NULL,
    INTEGER_IDX INTEGER NOT NULL,
    CONSTRAINT SKEWED_STRING_LIST_VALUES_PK PRIMARY KEY (STRING_LIST_ID,INTEGER_IDX)
);

-- Table SD_PARAMS for join relationship
CREATE TABLE SD_PARAMS
(
    SD_ID bigint NOT NULL,
    PARAM_KEY varchar(256) NOT NULL,
    PARAM_VALUE varchar(32672) NULL,
    CONSTRAINT SD_PARAMS_PK PRIMARY KEY (SD_ID,PARAM_KEY)
);

-- Constraints for table DB_PRIVS for class(es) [org.apache.hadoop.hive.metastore.model.MDBPrivilege]
CREATE INDEX DB_PRIVS_N49 ON DB_PRIVS (DB_ID);

CREATE UNIQUE INDEX DBPRIVILEGEINDEX ON DB_PRIVS (DB_ID,PRINCIPAL_NAME,PRINCIPAL_TYPE,DB_PRIV,GRANTOR,GRANTOR_TYPE);


-- Constraints for table ROLE_MAP for class(es) [org.apache.hadoop.hive.metastore.model.MRoleMap]
CREATE INDEX ROLE_MAP_N49 ON ROLE_MAP (ROLE_ID);

CREATE UNIQUE INDEX USERROLEMAPINDEX ON ROLE_MAP (PRINCIPAL_NAME,ROLE_ID,GRANTOR,GRANTOR_TYPE);


-- Constraints for table TYPES for class(es) [org.apache.hadoop.hive.metastore.model.MType]
CREATE UNIQUE INDEX UNIQUE_TYPE ON TYPES (TYPE_NAME);


-- Constraints for table PARTITIONS for class(es) [org.apache.hadoop.hive.metastore.model.MPartition]
CREATE UNIQUE INDEX UNIQUEPARTITION ON PARTITIONS (PART_NAME,TBL_ID);

CREATE INDEX PARTITIONS_N50 ON PARTITIONS (TBL_ID);

CREATE INDEX PARTITIONS_N49 ON PARTITIONS (SD_ID);


-- Constraints for table SKEWED_STRING_LIST for class(es) [org.apache.hadoop.hive.metastore.model.MStringList]

-- Constraints for table DBS for class(es) [org.apache.hadoop.hive.metastore.model.MDatabase]
CREATE UNIQUE INDEX UNIQUE_DATABASE ON DBS ("NAME");


-- Constraints for table NOTIFICATION_SEQUENCE for class(es) [org.apache.hadoop.hive.metastore.model.MNotificationNextId]

-- Constraints for table FUNCS for class(es) [org.apache.hadoop.hive.metastore.model.MFunction]
CREATE INDEX FUNCS_N49 ON FUNCS (DB_ID);

CREATE UNIQUE INDEX UNIQUEFUNCTION ON FUNCS (FUNC_NAME,DB_ID);


-- Constraints for table CDS for class(es) [org.apache.hadoop.hive.metastore.model.MColumnDescriptor]

-- Constraints for table KEY_CONSTRAINTS for class(es) [org.apache.hadoop.hive.metastore.model.MConstraint]
CREATE INDEX KEY_CONSTRAINTS_N50 ON KEY_CONSTRAINTS (CHILD_CD_ID);

CREATE INDEX KEY_CONSTRAINTS_N51 ON KEY_CONSTRAINTS (CHILD_TBL_ID);

CREATE INDEX KEY_CONSTRAINTS_N52 ON KEY_CONSTRAINTS (PARENT_TBL_ID);

CREATE INDEX KEY_CONSTRAINTS_N49 ON KEY_CONSTRAINTS (PARENT_CD_ID);


-- Constraints for table IDXS for class(es) [org.apache.hadoop.hive.metastore.model.MIndex]
CREATE UNIQUE INDEX UNIQUEINDEX ON IDXS (INDEX_NAME,ORIG_TBL_ID);

CREATE INDEX IDXS_N51 ON IDXS (SD_ID);

CREATE INDEX IDXS_N50 ON IDXS (ORIG_TBL_ID);

CREATE INDEX IDXS_N49 ON IDXS (INDEX_TBL_ID);


-- Constraints for table SDS for class(es) [org.apache.hadoop.hive.metastore.model.MStorageDescriptor]
CREATE INDEX SDS_N50 ON SDS (CD_ID);

CREATE INDEX SDS_N49 ON SDS (SERDE_ID);


-- Constraints for table MASTER_KEYS for class(es) [org.apache.hadoop.hive.metastore.model.MMasterKey]

-- Constraints for table PART_COL_PRIVS for class(es) [org.apache.hadoop.hive.metastore.model.MPartitionColumnPrivilege]
CREATE INDEX PARTITIONCOLUMNPRIVILEGEINDEX ON PART_COL_PRIVS (PART_ID,"COLUMN_NAME",PRINCIPAL_NAME,PRINCIPAL_TYPE,PART_COL_PRIV,GRANTOR,GRANTOR_TYPE);

CREATE INDEX PART_COL_PRIVS_N49 ON PART_COL_PRIVS (PART_ID);


-- Constraints for table PART_COL_STATS for class(es) [org.apache.hadoop.hive.metastore.model.MPartitionColumnStatistics]
CREATE INDEX PART_COL_STATS_N49 ON PART_COL_STATS (PART_ID);


-- Constraints for table TAB_COL_STATS for class(es) [org.apache.hadoop.hive.metastore.model.MTableColumnStatistics]
CREATE INDEX TAB_COL_STATS_N49 ON TAB_COL_STATS (TBL_ID);


-- Constraints for table GLOBAL_PRIVS for class(es) [org.apache.hadoop.hive.metastore.model.MGlobalPrivilege]
CREATE UNIQUE INDEX GLOBALPRIVILEGEINDEX ON GLOBAL_PRIVS (PRINCIPAL_NAME,PRINCIPAL_TYPE,USER_PRIV,GRANTOR,GRANTOR_TYPE);


-- Constraints for table TBLS for class(es) [org.apache.hadoop.hive.metastore.model.MTable]
CREATE INDEX TBLS_N50 ON TBLS (SD_ID);

CREATE INDEX TBLS_N49 ON TBLS (DB_ID);

CREATE UNIQUE INDEX UNIQUETABLE ON TBLS (TBL_NAME,DB_ID);


-- Constraints for table TBL_PRIVS for class(es) [org.apache.hadoop.hive.metastore.model.MTablePrivilege]
CREATE INDEX TABLEPRIVILEGEINDEX ON TBL_PRIVS (TBL_ID,PRINCIPAL_NAME,PRINCIPAL_TYPE,TBL_PRIV,GRANTOR,GRANTOR_TYPE);

CREATE INDEX TBL_PRIVS_N49 ON TBL_PRIVS (TBL_ID);


-- Constraints for table SERDES for class(es) [org.apache.hadoop.hive.metastore.model.MSerDeInfo]

-- Constraints for table NOTIFICATION_LOG for class(es) [org.apache.hadoop.hive.metastore.model.MNotificationLog]

-- Constraints for table PARTITION_EVENTS for class(es) [org.apache.hadoop.hive.metastore.model.MPartitionEvent]
CREATE INDEX PARTITIONEVENTINDEX ON PARTITION_EVENTS (PARTITION_NAME);


-- Constraints for table TBL_COL_PRIVS for class(es) [org.apache.hadoop.hive.metastore.model.MTableColumnPrivilege]
CREATE INDEX TABLECOLUMNPRIVILEGEINDEX ON TBL_COL_PRIVS (TBL_ID,"COLUMN_NAME",PRINCIPAL_NAME,PRINCIPAL_TYPE,TBL_COL_PRIV,GRANTOR,GRANTOR_TYPE);

CREATE INDEX TBL_COL_PRIVS_N49 ON TBL_COL_PRIVS (TBL_ID);


-- Constraints for table VERSION for class(es) [org.apache.hadoop.hive.metastore.model.MVersionTable]

-- Constraints for table PART_PRIVS for class(es) [org.apache.hadoop.hive.metastore.model.MPartitionPrivilege]
CREATE INDEX PART_PRIVS_N49 ON PART_PRIVS (PART_ID);

CREATE INDEX PARTPRIVILEGEINDEX ON PART_PRIVS (PART_ID,PRINCIPAL_NAME,PRINCIPAL_TYPE,PART_PRIV,GRANTOR,GRANTOR_TYPE);


-- Constraints for table DELEGATION_TOKENS for class(es) [org.apache.hadoop.hive.metastore.model.MDelegationToken]

-- Constraints for table ROLES for class(es) [org.apache.hadoop.hive.metastore.model.MRole]
CREATE UNIQUE INDEX ROLEENTITYINDEX ON ROLES (ROLE_NAME);


-- Constraints for table PARTITION_PARAMS
CREATE INDEX PARTITION_PARAMS_N49 ON PARTITION_PARAMS (PART_ID);


-- Constraints for table PARTITION_KEYS
CREATE INDEX PARTITION_KEYS_N49 ON PARTITION_KEYS (TBL_ID);


-- Constraints for table DATABASE_PARAMS
CREATE INDEX DATABASE_PARAMS_N49 ON DATABASE_PARAMS (DB_ID);


-- Constraints for table SORT_COLS
CREATE INDEX SORT_COLS_N49 ON SORT_COLS (SD_ID);


-- Constraints for table TYPE_FIELDS
CREATE INDEX TYPE_FIELDS_N49 ON TYPE_FIELDS (TYPE_NAME);


-- Constraints for table TABLE_PARAMS
CREATE INDEX TABLE_PARAMS_N49 ON TABLE_PARAMS (TBL_ID);


-- Constraints for table FUNC_RU
CREATE INDEX FUNC_RU_N49 ON FUNC_RU (FUNC_ID);


-- Constraints for table INDEX_PARAMS
CREATE INDEX INDEX_PARAMS_N49 ON INDEX_PARAMS (INDEX_ID);


-- Constraints for table BUCKETING_COLS
CREATE INDEX BUCKETING_COLS_N49 ON BUCKETING_COLS (SD_ID);


-- Constraints for table COLUMNS_V2
CREATE INDEX COLUMNS_V2_N49 ON COLUMNS_V2 (CD_ID);


-- Constraints for table SKEWED_COL_NAMES
CREATE INDEX SKEWED_COL_NAMES_N49 ON SKEWED_COL_NAMES (SD_ID);


-- Constraints for table SKEWED_VALUES
CREATE INDEX SKEWED_VALUES_N50 ON SKEWED_VALUES (SD_ID_OID);

CREATE INDEX SKEWED_VALUES_N49 ON SKEWED_VALUES (STRING_LIST_ID_EID);


-- Constraints for table PARTITION_KEY_VALS
CREATE INDEX PARTITION_KEY_VALS_N49 ON PARTITION_KEY_VALS (PART_ID);


-- Constraints for table SKEWED_COL_VALUE_LOC_MAP
CREATE INDEX SKEWED_COL_VALUE_LOC_MAP_N50 ON SKEWED_COL_VALUE_LOC_MAP (SD_ID);

CREATE INDEX SKEWED_COL_VALUE_LOC_MAP_N49 ON SKEWED_COL_VALUE_LOC_MAP (STRING_LIST_ID_KID);


-- Constraints for table SERDE_PARAMS
CREATE INDEX SERDE_PARAMS_N49 ON SERDE_PARAMS (SERDE_ID);


-- Constraints for table SKEWED_STRING_LIST_VALUES
CREATE INDEX SKEWED_STRING_LIST_VALUES_N49 ON SKEWED_STRING_LIST_VALUES (STRING_LIST_ID);


-- Constraints for table SD_PARAMS
CREATE INDEX SD_PARAMS_N49 ON SD_PARAMS (SD_ID);



-- ----------------------------------------------------------------
-- Sequences and SequenceTables

CREATE TABLE SEQUENCE_TABLE (SEQUENCE_NAME VARCHAR(255) NOT NULL PRIMARY KEY, NEXT_VAL BIGINT NOT NULL);
