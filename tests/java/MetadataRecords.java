// The kafka-metadata jar's own view of __cluster_metadata records, for tests/test_dump_metadata.py:
// "types" lists MetadataRecordType's constants; otherwise each stdin line "API_KEY VERSION JSON" is
// read by the release's JSON converter, written in the wire format at that version, and answered
// "HEX<TAB>JSON" (the message as the converter writes it back) or "ERROR<TAB>message".
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import org.apache.kafka.common.metadata.MetadataJsonConverters;
import org.apache.kafka.common.metadata.MetadataRecordType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

public class MetadataRecords {
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("types")) {
            for (MetadataRecordType t : MetadataRecordType.values()) {
                System.out.println(t.id() + " " + t.newMetadataRecord().getClass().getSimpleName() + " "
                        + t.lowestSupportedVersion() + " " + t.highestSupportedVersion());
            }
            return;
        }
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        for (String line; (line = in.readLine()) != null; ) {
            String[] parts = line.split(" ", 3);
            short apiKey = Short.parseShort(parts[0]);
            short version = Short.parseShort(parts[1]);
            try {
                ApiMessage message = MetadataJsonConverters.readJson(mapper.readTree(parts[2]), apiKey, version);
                ObjectSerializationCache cache = new ObjectSerializationCache();
                ByteBuffer buffer = ByteBuffer.allocate(message.size(cache, version));
                message.write(new ByteBufferAccessor(buffer), cache, version);
                JsonNode back = MetadataJsonConverters.writeJson(message, version);
                System.out.println(HexFormat.of().formatHex(buffer.array()) + "\t" + mapper.writeValueAsString(back));
            } catch (RuntimeException e) {
                System.out.println("ERROR\t" + e);
            }
        }
    }
}
