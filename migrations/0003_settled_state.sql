-- The last settled state of a cluster or node pool record, kept while `state` shows an
-- operation's intent (PROVISIONING, RECONCILING, DELETING, STOPPING). When that
-- operation ends without running (cancelled while queued) the record shows this state
-- again; when an earlier operation ends while a later one's intent is shown, its
-- outcome lands here. NULL: the record never settled (made by an unfinished operation).
ALTER TABLE clusters ADD COLUMN settled_state text
    CHECK (settled_state IN ('RUNNING', 'ERROR', 'DELETED'));
ALTER TABLE node_pools ADD COLUMN settled_state text
    CHECK (settled_state IN ('RUNNING', 'ERROR', 'DELETED'));

-- Records an earlier release stranded: an intent no unfinished operation holds (a
-- cancelled queued `down` left its cluster DELETING for good). ERROR is where `up`,
-- `down`, pool add and pool remove all work from.
UPDATE clusters c SET state = 'ERROR', reconciling = false, update_time = now(),
       version = version + 1
 WHERE c.state IN ('PROVISIONING', 'RECONCILING', 'DELETING')
   AND NOT EXISTS (SELECT 1 FROM operations o
                    WHERE o.cluster_id = c.id AND o.end_time IS NULL
                      AND o.op_type = CASE c.state WHEN 'DELETING' THEN 'DOWN_CLUSTER'
                                                   ELSE 'UP_CLUSTER' END);
UPDATE node_pools p SET state = 'ERROR', update_time = now()
 WHERE p.state IN ('PROVISIONING', 'STOPPING')
   AND NOT EXISTS (SELECT 1 FROM operations o
                    WHERE o.cluster_id = p.cluster_id AND o.end_time IS NULL
                      AND o.input -> 'pools' ? p.pool_id);
