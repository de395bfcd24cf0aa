-- S3 buckets without encryption: aws_s3_bucket instances whose
-- server_side_encryption_configuration attribute is empty or absent and
-- that no aws_s3_bucket_server_side_encryption_configuration of the same
-- state names (AWS provider 4 and later configure it there). An attribute
-- search: adapt the type and the attribute paths to search for anything
-- else (attributes ->> 'name' reads one attribute as text on both stores).
SELECT b.state,
       b.address,
       b.attributes ->> 'bucket' AS bucket
FROM resources b
WHERE b.mode = 'managed'
  AND b.type = 'aws_s3_bucket'
  AND COALESCE(b.attributes ->> 'server_side_encryption_configuration', '[]') = '[]'
  AND NOT EXISTS (
      SELECT 1
      FROM resources e
      WHERE e.state = b.state
        AND e.mode = 'managed'
        AND e.type = 'aws_s3_bucket_server_side_encryption_configuration'
        AND e.attributes ->> 'bucket' = b.attributes ->> 'bucket'
  )
ORDER BY b.state, b.address;
